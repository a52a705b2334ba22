// Package nsys reads Nsight Systems SQLite exports (nsys export --type sqlite) into an
// activity.Sink, read-only, through modernc.org/sqlite (pure Go).
package nsys

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
	_ "modernc.org/sqlite" // pure Go: the plugin still cross-compiles without cgo
)

// CUPTI copyKind values (CUpti_ActivityMemcpyKind) as nsys exports them.
var copyKinds = map[int64]string{1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA", 8: "DtoD", 9: "HtoH", 10: "PtoP"}

// Read reads an Nsight Systems SQLite export (nsys export --type sqlite) into c, read-only.
// Timestamps are already nanoseconds. Tables absent from the export mean no such activity.
func Read(ctx context.Context, path string, c activity.Sink) error {
	c.AddFileName(path)
	return ReadAt(ctx, path, c)
}

// ReadAt reads the export SQLite opens at path (which may be /proc/self/fd/N), without noting
// the trace IDs of path's name: the caller names the file.
func ReadAt(ctx context.Context, path string, c activity.Sink) error {
	u := url.URL{Scheme: "file", OmitHost: true, Path: path, RawQuery: "mode=ro&_pragma=query_only(1)"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return fmt.Errorf("gputrace: %s: %w", path, err)
	}
	defer db.Close()
	return readNsysDB(ctx, db, c)
}

func readNsysDB(ctx context.Context, db *sql.DB, c activity.Sink) error {
	cols, err := nsysColumns(ctx, db)
	if err != nil {
		return err
	}
	if cols["StringIds"] == nil {
		if len(cols) == 0 {
			return fmt.Errorf("gputrace: not an Nsight Systems export (no tables)")
		}
		c.Notice("the export has no StringIds table: names are shown as ids")
	}
	name := func(col string) string {
		if cols["StringIds"] == nil {
			return "CAST(" + col + " AS TEXT)"
		}
		return "COALESCE((SELECT value FROM StringIds WHERE id = " + col + "), CAST(" + col + " AS TEXT))"
	}
	// CUDA numbers correlations per process: in a multi-process export, a call and its GPU work
	// join on the process too, where every table says it (the calls' globalTid, the GPU
	// activities' globalPid).
	byProcess := cols["CUPTI_ACTIVITY_KIND_RUNTIME"]["globalTid"]
	for _, t := range []string{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"} {
		if cols[t] != nil && !cols[t]["globalPid"] {
			byProcess = false
		}
	}
	launcher := func(globalPid int64) int64 {
		if !byProcess {
			return 0
		}
		pid, _ := splitGlobalTid(globalPid)
		return pid
	}
	// The runtime calls first: each kernel then finds its launch call already read, and the
	// per-launch join holds no kernel waiting for its call. Rows are read in no particular order
	// (Nsight Systems 2025.6 no longer writes them in time order); nothing below relies on one.
	if r := cols["CUPTI_ACTIVITY_KIND_RUNTIME"]; r != nil {
		if err := need("CUPTI_ACTIVITY_KIND_RUNTIME", r, "start", "end", "nameId"); err != nil {
			return err
		}
		q := "SELECT start, end, " + opt(r, "correlationId") + ", " + opt(r, "globalTid") + ", " + name("nameId") + " FROM CUPTI_ACTIVITY_KIND_RUNTIME"
		if err := scanRows(ctx, db, q, func(s scanner) error {
			a := activity.Activity{Kind: activity.KindRuntime}
			var tid int64
			err := s.Scan(&a.Start, &a.End, &a.Correlation, &tid, &a.Name)
			a.Process, a.Thread = splitGlobalTid(tid)
			a.Launcher = launcher(tid)
			// nsys names calls with their version suffix: cudaLaunchKernel_v7000.
			if i := strings.Index(a.Name, "_v"); i > 0 {
				a.Name = a.Name[:i]
			}
			c.Add(a)
			return err
		}); err != nil {
			return err
		}
	}
	if k := cols["CUPTI_ACTIVITY_KIND_KERNEL"]; k != nil {
		nameCol := "demangledName"
		if !k["demangledName"] {
			nameCol = "shortName"
		}
		if err := need("CUPTI_ACTIVITY_KIND_KERNEL", k, "start", "end", nameCol); err != nil {
			return err
		}
		q := "SELECT start, end, " + opt(k, "deviceId") + ", " + opt(k, "streamId") + ", " + opt(k, "correlationId") + ", " + opt(k, "globalPid") + ", " + name(nameCol) +
			", " + opt(k, "gridX") + ", " + opt(k, "gridY") + ", " + opt(k, "gridZ") + ", " + opt(k, "blockX") + ", " + opt(k, "blockY") + ", " + opt(k, "blockZ") + " FROM CUPTI_ACTIVITY_KIND_KERNEL"
		if err := scanRows(ctx, db, q, func(s scanner) error {
			a := activity.Activity{Kind: activity.KindKernel}
			var pid int64
			err := s.Scan(&a.Start, &a.End, &a.Device, &a.Stream, &a.Correlation, &pid, &a.Name,
				&a.Grid[0], &a.Grid[1], &a.Grid[2], &a.Block[0], &a.Block[1], &a.Block[2])
			a.Launcher = launcher(pid)
			c.Add(a)
			return err
		}); err != nil {
			return err
		}
	}
	if m := cols["CUPTI_ACTIVITY_KIND_MEMCPY"]; m != nil {
		if err := need("CUPTI_ACTIVITY_KIND_MEMCPY", m, "start", "end"); err != nil {
			return err
		}
		q := "SELECT start, end, " + opt(m, "deviceId") + ", " + opt(m, "streamId") + ", " + opt(m, "correlationId") + ", " + opt(m, "globalPid") + ", " + opt(m, "bytes") + ", " + opt(m, "copyKind") + " FROM CUPTI_ACTIVITY_KIND_MEMCPY"
		if err := scanRows(ctx, db, q, func(s scanner) error {
			a := activity.Activity{Kind: activity.KindMemcpy}
			var kind, pid int64
			err := s.Scan(&a.Start, &a.End, &a.Device, &a.Stream, &a.Correlation, &pid, &a.Bytes, &kind)
			a.Launcher = launcher(pid)
			a.Name = "Memcpy " + copyKindName(kind)
			c.Add(a)
			return err
		}); err != nil {
			return err
		}
	}
	if m := cols["CUPTI_ACTIVITY_KIND_MEMSET"]; m != nil {
		if err := need("CUPTI_ACTIVITY_KIND_MEMSET", m, "start", "end"); err != nil {
			return err
		}
		q := "SELECT start, end, " + opt(m, "deviceId") + ", " + opt(m, "streamId") + ", " + opt(m, "correlationId") + ", " + opt(m, "globalPid") + ", " + opt(m, "bytes") + " FROM CUPTI_ACTIVITY_KIND_MEMSET"
		if err := scanRows(ctx, db, q, func(s scanner) error {
			a := activity.Activity{Kind: activity.KindMemset, Name: "Memset"}
			var pid int64
			err := s.Scan(&a.Start, &a.End, &a.Device, &a.Stream, &a.Correlation, &pid, &a.Bytes)
			a.Launcher = launcher(pid)
			c.Add(a)
			return err
		}); err != nil {
			return err
		}
	}
	if n := cols["NVTX_EVENTS"]; n != nil {
		text := "''"
		switch {
		case n["text"] && n["textId"] && cols["StringIds"] != nil:
			text = "COALESCE(text, (SELECT value FROM StringIds WHERE id = textId), '')"
		case n["text"]:
			text = "COALESCE(text, '')"
		}
		// Ranges only (end set); marks have no duration to launch kernels in.
		q := "SELECT COALESCE(start, 0), COALESCE(" + optRaw(n, "end") + ", -1), " + text + ", " + opt(n, "globalTid") + " FROM NVTX_EVENTS"
		if err := scanRows(ctx, db, q, func(s scanner) error {
			a := activity.Activity{Kind: activity.KindAnnotation}
			var tid int64
			err := s.Scan(&a.Start, &a.End, &a.Name, &tid)
			a.Process, a.Thread = splitGlobalTid(tid)
			if a.End < a.Start {
				c.ScanTraceIDs(a.Name, activity.SourceAnnotation)
				return err
			}
			c.Add(a)
			return err
		}); err != nil {
			return err
		}
	}
	if c.KeepsTimeline() {
		return readNsysNames(ctx, db, cols, c)
	}
	return nil
}

// splitGlobalTid reads Nsight's globalTid: the process ID in bits 24–47, the thread ID in the
// low 24 bits (the bits above name the machine and VM).
func splitGlobalTid(g int64) (pid, tid int64) {
	return (g >> 24) & 0xFFFFFF, g & 0xFFFFFF
}

// readNsysNames reads what the timeline shows beside the activities: the names of the
// processes whose threads made CUDA calls or NVTX ranges (PROCESSES lists every process of the
// machine), and the session's start (the export's times count from it).
func readNsysNames(ctx context.Context, db *sql.DB, cols map[string]map[string]bool, c activity.Sink) error {
	if t := cols["TARGET_INFO_SESSION_START_TIME"]; t["utcEpochNs"] {
		if err := scanRows(ctx, db, "SELECT COALESCE(utcEpochNs, 0) FROM TARGET_INFO_SESSION_START_TIME LIMIT 1", func(s scanner) error {
			var ns int64
			err := s.Scan(&ns)
			c.SetEpoch(ns)
			return err
		}); err != nil {
			return err
		}
	}
	p := cols["PROCESSES"]
	if !p["pid"] || !p["name"] {
		return nil
	}
	var threads []string
	for _, t := range []string{"CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS"} {
		if cols[t]["globalTid"] {
			threads = append(threads, "SELECT DISTINCT (globalTid >> 24) & 16777215 FROM "+t)
		}
	}
	if len(threads) == 0 {
		return nil
	}
	q := fmt.Sprintf("SELECT pid, COALESCE(name, '') FROM PROCESSES WHERE pid IN (%s) LIMIT %d", strings.Join(threads, " UNION "), activity.MaxProcessNames)
	return scanRows(ctx, db, q, func(s scanner) error {
		var pid int64
		var name string
		err := s.Scan(&pid, &name)
		c.NameProcess(pid, name)
		return err
	})
}

func copyKindName(k int64) string {
	if n, ok := copyKinds[k]; ok {
		return n
	}
	return "other"
}

type scanner interface{ Scan(...any) error }

func scanRows(ctx context.Context, db *sql.DB, q string, row func(scanner) error) error {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("gputrace: %s: %w", q, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows); err != nil {
			return fmt.Errorf("gputrace: %s: %w", q, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("gputrace: %s: %w", q, err)
	}
	return nil
}

// opt reads a column the schema may lack (older nsys versions) as 0.
func opt(cols map[string]bool, col string) string {
	if cols[col] {
		return "COALESCE(" + col + ", 0)"
	}
	return "0"
}

func optRaw(cols map[string]bool, col string) string {
	if cols[col] {
		return col
	}
	return "NULL"
}

func need(table string, cols map[string]bool, names ...string) error {
	for _, n := range names {
		if !cols[n] {
			return fmt.Errorf("gputrace: table %s has no column %s: not an Nsight Systems export schema", table, n)
		}
	}
	return nil
}

// nsysColumns lists the tables the analyses read, with their columns.
func nsysColumns(ctx context.Context, db *sql.DB) (map[string]map[string]bool, error) {
	out := map[string]map[string]bool{}
	for _, t := range []string{"StringIds", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET", "NVTX_EVENTS", "PROCESSES", "TARGET_INFO_SESSION_START_TIME"} {
		rows, err := db.QueryContext(ctx, "SELECT name FROM pragma_table_info(?)", t)
		if err != nil {
			return nil, fmt.Errorf("gputrace: not a readable SQLite file: %w", err)
		}
		cols := map[string]bool{}
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				rows.Close()
				return nil, err
			}
			cols[n] = true
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("gputrace: not a readable SQLite file: %w", err)
		}
		if len(cols) > 0 {
			out[t] = cols
		}
	}
	return out, nil
}
