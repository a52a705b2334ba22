package gputrace

import (
	"errors"
	"time"
)

// What a store of kernel traces (tracestore.Store: a data source's directories and buckets)
// answers, declared beside the analyses so that the join reads any store of them.

// TraceFile is one trace file found under a configured directory, or one object of a bucket
// (Rel is then bucket:<name>/<key under its prefix>, and Size 0 until it is opened).
type TraceFile struct {
	Dir      string    `json:"-"` // the configured directory, resolved
	Rel      string    `json:"file"`
	Abs      string    `json:"-"` // resolved path, inside Dir
	Key      string    `json:"-"` // a bucket object's key under the bucket's prefix
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
	TraceIDs []string  `json:"traceIds"`
	// BucketName is the bucket the file is an object of, "" for a file of a directory.
	BucketName string `json:"-"`
}

// Bucket is the name of the bucket the file is an object of, "" for a file of a directory.
func (f TraceFile) Bucket() string { return f.BucketName }

// Found is one trace file and its analysis (Err: a per-file error; Result may then cover what
// was read before it). Result and Err are both nil until Analyze fills them in.
type Found struct {
	File   TraceFile
	Result *Result
	Err    error
}

// DiffRequest is a kernels diff: the target, as TracesOf takes it (one file, or else the traces
// of a request by its trace ID), and the baseline it is compared with.
type DiffRequest struct {
	TraceID, File string
	Baseline      DiffBaseline
}

// DiffBaseline is another request (TraceID), or the Recent most recent requests whose files
// match Match (a glob on the file reference, path.Match: without "/" on the file's name, with
// "/" on the whole reference; empty: DefaultBaselineMatch of each of the target's files).
type DiffBaseline struct {
	TraceID string
	Recent  int
	Match   string
}

// BucketCheck is one bucket's line in the health check.
type BucketCheck struct {
	Name      string
	Objects   int  // trace objects seen under its prefix
	Truncated bool // more than traceMaxFiles: only the most recent are kept
	Err       error
}

// ErrChosenFile is what every error about the file a query names is (errors.Is): not a trace
// file, not found, or outside the trace directories; the user's to fix.
var ErrChosenFile = errors.New("the chosen trace file cannot be read")

// ChosenFileError keeps err's own message and marks it as ErrChosenFile.
func ChosenFileError(err error) error { return chosenFileError{err} }

type chosenFileError struct{ error }

func (e chosenFileError) Is(target error) bool { return target == ErrChosenFile }
func (e chosenFileError) Unwrap() error        { return e.error }
