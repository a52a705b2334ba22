package tracestore

import (
	"sync"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
)

// maxKnownFiles bounds the unnamed files whose trace IDs are remembered (a few hundred bytes
// each); past it the memory starts again.
const maxKnownFiles = 4096

// insideIDs remembers the trace IDs read inside unnamed files, by the file's path, size and
// modification time. A request's kernel trace is looked for by content, when no file name
// names it, at every join: each trace query, each of a tail's 30 joins, the request-level
// dashboard's panels. Opening and analysing up to MaxContentScan files each time made every
// lookup cost as much as reading them; a file read whole once is not opened again to learn it
// does not hold the request, until it changes (a trace still being written grows).
type insideIDs struct {
	mu  sync.Mutex
	ids map[fileIdentity][]activity.TraceID
}

type fileIdentity struct {
	abs      string
	size     int64
	modified int64
}

func identityOf(f gputrace.TraceFile) fileIdentity {
	return fileIdentity{abs: f.Abs, size: f.Size, modified: f.Modified.UnixNano()}
}

// get answers the trace IDs inside f, if it was read whole as it is now.
func (k *insideIDs) get(f gputrace.TraceFile) (*gputrace.Result, bool) {
	if k == nil {
		return nil, false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	ids, ok := k.ids[identityOf(f)]
	if !ok {
		return nil, false
	}
	return &gputrace.Result{TraceIDs: ids}, true // read through Result.Matches, as a read file is
}

// put remembers the trace IDs of a file read whole (a read that failed part way may have missed
// some, and is not remembered).
func (k *insideIDs) put(f gputrace.TraceFile, res *gputrace.Result) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ids == nil || len(k.ids) >= maxKnownFiles {
		k.ids = map[fileIdentity][]activity.TraceID{}
	}
	k.ids[identityOf(f)] = res.TraceIDs
}
