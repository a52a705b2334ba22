package flamegraph

import (
	"regexp"
	"strings"
)

// OwnFunction is the deepest frame of the service's own code on the heaviest path to fn: of the
// call paths (root to fn, by names) that end in fn, the one holding the most self value of fn
// (ties: the larger total, then the first met depth first), walked from fn toward the root; the
// first frame IsLibraryFrame does not call library code is the answer. fn itself is the answer
// when it is own code. ok is false when fn is on no path of t, or no frame of its heaviest path is
// own code. The root (t itself) is not a frame and is never returned.
//
// It names what a user can change when the hot function (the largest self value, usually a
// runtime or library frame such as crypto/internal/fips140/sha256.blockSHANI) is not theirs: the
// caller of their own code that leads to it (main.dbQuery).
func OwnFunction(t *Node, fn string) (name string, ok bool) {
	path := heaviestPathTo(t, fn)
	for i := len(path) - 1; i >= 0; i-- {
		if !IsLibraryFrame(path[i]) {
			return path[i], true
		}
	}
	return "", false
}

// heaviestPathTo returns the names from below the root down to fn on the path that holds the
// most self value of fn; nil when no node is named fn. Nodes with equal name paths (unmerged
// siblings of a tree built from levels) count as one path.
func heaviestPathTo(t *Node, fn string) []string {
	if t == nil || fn == "" {
		return nil
	}
	type candidate struct {
		path        []string
		self, total int64
	}
	var found []*candidate
	byKey := map[string]*candidate{}
	var stack []string
	var walk func(n *Node)
	walk = func(n *Node) {
		stack = append(stack, n.Name)
		if n.Name == fn {
			key := strings.Join(stack, "\x00")
			c := byKey[key]
			if c == nil {
				c = &candidate{path: append([]string(nil), stack...)}
				byKey[key] = c
				found = append(found, c)
			}
			c.self += n.Self
			c.total += n.Total
		}
		for _, k := range n.Children {
			walk(k)
		}
		stack = stack[:len(stack)-1]
	}
	for _, c := range t.Children {
		walk(c)
	}
	var best *candidate
	for _, c := range found {
		if best == nil || c.self > best.self || c.self == best.self && c.total > best.total {
			best = c
		}
	}
	if best == nil {
		return nil
	}
	return best.path
}

// IsLibraryFrame reports whether a frame name is runtime, standard library or third-party code.
// The plugin does not know the service's module path, package names or source root, so it cannot
// test "is this the user's code" directly; it recognises what is certainly not theirs (runtimes,
// standard libraries, well-known dependencies) from the way the profilers name frames, and calls
// everything else own code. An unknown dependency therefore reads as own code, which is the
// better error: the answer is still a frame on the path to the hot function, never a runtime one.
//
// Native and unknown frames, any language: "" and bracketed names ("[unknown]",
// "[kernel.kallsyms]", "[vdso]"), unsymbolised addresses ("0x4a5b6c"), shared objects ("libc.so.6",
// "libc.so.6+0x29d90", "libtorch_cpu.so"), C reserved identifiers ("__libc_start_main",
// "_PyEval_EvalFrameDefault": a leading "__" or "_" and a capital belongs to the implementation)
// and the thread entry points _start, start_thread, clone, clone3 are library.
//
// Python (py-spy and pyroscope-io name frames "function (file:line)" or "function (file)"; file is
// absolute, or shortened by py-spy to the path inside its package: "threading.py",
// "torch/nn/modules/module.py"): library when the file is under site-packages or dist-packages,
// under an interpreter's lib directory (lib/python3.11/, lib/python3/, Windows Python311/Lib/, PyPy's
// lib-python and lib_pypy), is a "<frozen …>", "<built-in>" or other "<…>" pseudo file, or is a
// native module (".so"); a relative file is library when its first element is a standard library
// module ("threading.py", "asyncio/events.py", "concurrent/futures/thread.py") or a well-known
// third-party package ("torch/…", "flask/…", "numpy/…"). A few stdlib module names that are as
// likely a service's own file (code, cmd, profile, trace, types, token, site, test) are left out.
// Any other file ("app/server.py", "/srv/app/model.py") is own code.
//
// Go (pprof names "import/path.Func", "import/path.(*Type).Method", "main.f.func1"): "main." is
// own code. A package whose path's first element has no dot is the standard library or the
// runtime (runtime, crypto/…, net/http, encoding/json, sync, syscall, internal/…, vendor/…) when
// that element is one of the standard library's top-level names; a dotless first element that
// is not (a module made with "go mod init svc") is own code. Domain-named packages
// ("github.com/…", "example.com/…") are library only under a documented list of well-known
// dependency roots (goDependencyRoots: golang.org/x, google.golang.org, go.opentelemetry.io,
// gopkg.in, go.uber.org, k8s.io, github.com/grafana/pyroscope-go, github.com/lib/pq,
// github.com/jackc, github.com/prometheus, github.com/gin-gonic, github.com/labstack,
// github.com/valyala, …); every other domain-named package is own code, because a service's own
// module is domain-named too (github.com/acme/svc) and marking all of github.com as library
// would hide it. Compiler-generated "type:.eq.…" / "type..hash.…" and "go:…" symbols are library.
//
// Others: JVM frames whose class is in java, javax, jdk, sun, com.sun, kotlin, kotlinx, scala or
// a well-known JVM dependency (org.springframework, io.netty, org.apache, com.fasterxml, …), with
// dots or, as async-profiler writes them, slashes; .NET System. and Microsoft.; Rust (and C++)
// std::, core::, alloc:: (and "<std::… as …>" impls). Everything else is own code.
func IsLibraryFrame(name string) bool {
	name = strings.TrimSpace(name)
	if name == "" || isNativeFrame(name) {
		return true
	}
	if loc, ok := pythonLocation(name); ok {
		return isPythonLibrary(loc)
	}
	if hasAnyPrefix(name, managedLibraryPrefixes) || hasAnyPrefix(name, rustLibraryPrefixes) {
		return true
	}
	if lib, ok := goLibrary(name); ok {
		return lib
	}
	return isCReserved(name)
}

var (
	hexAddress = regexp.MustCompile(`^0x[0-9a-fA-F]+$`)
	// sharedObject is a file name "x.so", "x.so.6", "x.so.1.0" followed by the end, a space, an
	// offset ("+0x…") or a closing bracket.
	sharedObject = regexp.MustCompile(`[\w.+-]\.so(\.\d+)*($|[\s+!:)\]])`)
)

func isNativeFrame(name string) bool {
	return name[0] == '[' || name == "<unknown>" || hexAddress.MatchString(name) ||
		sharedObject.MatchString(name)
}

// isCReserved reports names the C implementation reserves ("__x", "_X") and the usual native
// thread entry points.
func isCReserved(name string) bool {
	switch name {
	case "_start", "start_thread", "clone", "clone3":
		return true
	}
	return len(name) > 1 && name[0] == '_' && (name[1] == '_' || name[1] >= 'A' && name[1] <= 'Z')
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// managedLibraryPrefixes are the JVM's and .NET's runtime and well-known dependency roots, in the
// dotted form (JFR, Java stack traces) and async-profiler's slashed form.
var managedLibraryPrefixes = func() []string {
	roots := []string{
		"java", "javax", "jdk", "sun", "com.sun", "kotlin", "kotlinx", "scala",
		"org.springframework", "io.netty", "org.apache", "org.eclipse.jetty", "com.fasterxml",
		"io.grpc", "okhttp3", "okio", "io.micrometer", "ch.qos.logback", "org.slf4j",
		"org.hibernate", "io.opentelemetry", "io.pyroscope", "one.profiler", "reactor.core",
		"io.undertow", "com.zaxxer.hikari", "org.postgresql", "com.mysql", "io.lettuce",
		"redis.clients.jedis", "com.google.protobuf", "com.google.common",
	}
	var out []string
	for _, r := range roots {
		out = append(out, r+".", strings.ReplaceAll(r, ".", "/")+"/")
	}
	return append(out, "System.", "Microsoft.")
}()

var rustLibraryPrefixes = []string{"std::", "core::", "alloc::", "<std::", "<core::", "<alloc::"}

// pythonLocation returns the file of a "function (file:line)" or "function (file)" frame, when
// the file is a Python source, a "<…>" pseudo file or a native module.
func pythonLocation(name string) (string, bool) {
	if !strings.HasSuffix(name, ")") {
		return "", false
	}
	open := strings.LastIndex(name, " (")
	if open <= 0 {
		return "", false
	}
	loc := name[open+2 : len(name)-1]
	if i := strings.LastIndexByte(loc, ':'); i >= 0 && isDigits(loc[i+1:]) {
		loc = loc[:i]
	}
	loc = strings.ReplaceAll(loc, `\`, "/")
	switch {
	case strings.HasPrefix(loc, "<") && strings.HasSuffix(loc, ">"):
	case strings.HasSuffix(loc, ".py"), strings.HasSuffix(loc, ".pyx"),
		strings.HasSuffix(loc, ".pyw"), strings.HasSuffix(loc, ".pyi"):
	default:
		return "", false
	}
	return loc, true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

var pythonLibraryDir = regexp.MustCompile(`(?i)(^|/)((site|dist)-packages|lib/python\d[\d.]*t?|python\d+/lib|lib-python|lib_pypy|[^/]+\.egg)/`)

func isPythonLibrary(loc string) bool {
	if strings.HasPrefix(loc, "<") || pythonLibraryDir.MatchString(loc) {
		return true
	}
	if strings.HasPrefix(loc, "/") || len(loc) > 1 && loc[1] == ':' { // absolute: Unix, Windows
		return false
	}
	loc = strings.TrimPrefix(loc, "./")
	first, _, nested := strings.Cut(loc, "/")
	if !nested {
		first = strings.TrimSuffix(first, ".py")
	}
	return pythonStdlib[first] || pythonThirdParty[first]
}

// pythonStdlib holds the standard library's top-level modules and packages (after
// sys.stdlib_module_names, pure-Python ones), less names a service is as likely to use for its own
// files: code, cmd, profile, trace, types, token, site, this, test.
var pythonStdlib = setOf(
	"__future__", "_collections_abc", "_compat_pickle", "_compression", "_markupbase",
	"_osx_support", "_py_abc", "_pydatetime", "_pydecimal", "_pyio", "_pylong", "_sitebuiltins",
	"_strptime", "_threading_local", "_weakrefset", "abc", "aifc", "argparse", "ast", "asynchat",
	"asyncio", "asyncore", "base64", "bdb", "binascii", "bisect", "bz2", "calendar", "cgi", "cgitb",
	"chunk", "codecs", "codeop", "collections", "colorsys", "compileall", "concurrent",
	"configparser", "contextlib", "contextvars", "copy", "copyreg", "cProfile", "crypt", "csv",
	"ctypes", "curses", "dataclasses", "datetime", "dbm", "decimal", "difflib", "dis", "distutils",
	"doctest", "email", "encodings", "ensurepip", "enum", "filecmp", "fileinput", "fnmatch",
	"fractions", "ftplib", "functools", "genericpath", "getopt", "getpass", "gettext", "glob",
	"graphlib", "gzip", "hashlib", "heapq", "hmac", "html", "http", "idlelib", "imaplib", "imghdr",
	"imp", "importlib", "inspect", "io", "ipaddress", "json", "keyword", "lib2to3", "linecache",
	"locale", "logging", "lzma", "mailbox", "mailcap", "mimetypes", "modulefinder",
	"multiprocessing", "netrc", "nntplib", "ntpath", "nturl2path", "numbers", "opcode", "operator",
	"optparse", "os", "pathlib", "pdb", "pickle", "pickletools", "pipes", "pkgutil", "platform",
	"plistlib", "poplib", "posixpath", "pprint", "pstats", "pty", "py_compile", "pyclbr", "pydoc",
	"pydoc_data", "queue", "quopri", "random", "re", "reprlib", "rlcompleter", "runpy", "sched",
	"secrets", "selectors", "shelve", "shlex", "shutil", "signal", "smtplib", "sndhdr", "socket",
	"socketserver", "sqlite3", "sre_compile", "sre_constants", "sre_parse", "ssl", "stat",
	"statistics", "string", "stringprep", "struct", "subprocess", "sunau", "symtable", "sysconfig",
	"tabnanny", "tarfile", "telnetlib", "tempfile", "textwrap", "threading", "timeit", "tkinter",
	"tokenize", "tomllib", "traceback", "tracemalloc", "tty", "turtle", "typing", "unittest",
	"urllib", "uu", "uuid", "venv", "warnings", "wave", "weakref", "webbrowser", "wsgiref",
	"xdrlib", "xml", "xmlrpc", "zipapp", "zipfile", "zipimport", "zoneinfo",
)

// pythonThirdParty holds the import names of widely used PyPI packages, as py-spy's shortened file
// names start with them ("torch/nn/modules/module.py").
var pythonThirdParty = setOf(
	"torch", "torchvision", "torchaudio", "triton", "numpy", "scipy", "pandas", "sklearn",
	"tensorflow", "keras", "jax", "jaxlib", "transformers", "tokenizers", "safetensors",
	"accelerate", "huggingface_hub", "onnxruntime", "xgboost", "lightgbm", "numba", "llvmlite",
	"pyarrow", "cv2", "PIL", "vllm", "flask", "werkzeug", "jinja2", "markupsafe", "click", "django",
	"fastapi", "starlette", "uvicorn", "gunicorn", "pydantic", "pydantic_core", "anyio", "sniffio",
	"h11", "httpx", "httpcore", "requests", "urllib3", "certifi", "idna", "charset_normalizer",
	"aiohttp", "yarl", "multidict", "grpc", "google", "opentelemetry", "pyroscope", "sqlalchemy",
	"psycopg2", "psycopg", "asyncpg", "pymysql", "redis", "celery", "kombu", "boto3", "botocore",
	"s3transfer", "gevent", "greenlet", "eventlet", "tornado", "twisted", "sentry_sdk",
	"structlog", "orjson", "ujson", "yaml", "msgpack", "ray", "dask", "ddtrace",
	"prometheus_client", "setuptools", "pkg_resources", "pip", "six", "attr", "attrs",
	"typing_extensions", "wrapt", "tqdm", "uvloop", "websockets", "trio",
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// goLibrary classifies a Go symbol; ok is false when name is not one ("pkg.Func" with an import
// path before the last element's first dot).
func goLibrary(name string) (lib, ok bool) {
	if strings.HasPrefix(name, "type:") || strings.HasPrefix(name, "type..") ||
		strings.HasPrefix(name, "go:") {
		return true, true
	}
	// The import path ends at the first dot after its last slash; slashes inside a method's
	// receiver or a generic's type arguments do not count.
	head := name
	if i := strings.IndexAny(head, "([ "); i >= 0 {
		head = head[:i]
	}
	slash := strings.LastIndexByte(head, '/')
	dot := strings.IndexByte(head[slash+1:], '.')
	if dot <= 0 {
		return false, false
	}
	pkg := name[:slash+1+dot]
	first, _, _ := strings.Cut(pkg, "/")
	switch {
	case first == "main":
		return false, true
	case !strings.Contains(first, "."):
		return goStdlib[first], true
	}
	for _, root := range goDependencyRoots {
		if pkg == root || strings.HasPrefix(pkg, root+"/") {
			return true, true
		}
	}
	return false, true
}

// goStdlib holds the standard library's top-level import path elements (go list std), with cmd
// for the toolchain.
var goStdlib = setOf(
	"archive", "arena", "bufio", "bytes", "cmd", "cmp", "compress", "container", "context",
	"crypto", "database", "debug", "embed", "encoding", "errors", "expvar", "flag", "fmt", "go",
	"hash", "html", "image", "index", "internal", "io", "iter", "log", "maps", "math", "mime",
	"net", "os", "path", "plugin", "reflect", "regexp", "runtime", "slices", "sort", "strconv",
	"strings", "structs", "sync", "syscall", "testing", "text", "time", "unicode", "unique",
	"unsafe", "vendor", "weak",
)

// goDependencyRoots are the module roots of widely used Go dependencies (among the Go module
// proxy's most imported modules): whole hosts, organisations that publish only libraries, and
// single modules. A package under one of them is library code.
var goDependencyRoots = []string{
	// Hosts.
	"golang.org/x", "google.golang.org", "go.opentelemetry.io", "gopkg.in", "go.uber.org",
	"k8s.io", "sigs.k8s.io", "cloud.google.com/go", "go.mongodb.org", "go.etcd.io", "gorm.io",
	"entgo.io", "connectrpc.com", "nhooyr.io/websocket", "gotest.tools", "honnef.co/go",
	// Organisations.
	"github.com/jackc", "github.com/prometheus", "github.com/gin-gonic", "github.com/labstack",
	"github.com/valyala", "github.com/gofiber", "github.com/gorilla", "github.com/go-chi",
	"github.com/golang", "github.com/google", "github.com/klauspost", "github.com/json-iterator",
	"github.com/goccy", "github.com/sirupsen", "github.com/spf13", "github.com/aws",
	"github.com/Azure", "github.com/grpc-ecosystem", "github.com/hashicorp", "github.com/stretchr",
	"github.com/cespare", "github.com/segmentio", "github.com/nats-io", "github.com/uptrace",
	"github.com/dgraph-io", "github.com/cockroachdb", "github.com/docker", "github.com/moby",
	"github.com/containerd", "github.com/opencontainers", "github.com/envoyproxy",
	"github.com/open-telemetry", "github.com/go-redis", "github.com/redis", "github.com/pyroscope-io",
	"github.com/go-sql-driver", "github.com/gogo", "github.com/confluentinc", "github.com/pkg",
	// Single modules.
	"github.com/grafana/pyroscope-go", "github.com/grafana/otel-profiling-go", "github.com/lib/pq",
	"github.com/mattn/go-sqlite3", "github.com/gomodule/redigo", "github.com/julienschmidt/httprouter",
	"github.com/bytedance/sonic", "github.com/rs/zerolog", "github.com/IBM/sarama",
	"github.com/Shopify/sarama", "github.com/twmb/franz-go", "github.com/jmoiron/sqlx",
	"github.com/mongodb/mongo-go-driver", "github.com/elastic/go-elasticsearch",
	"github.com/minio/minio-go", "github.com/vmihailenco/msgpack", "github.com/andybalholm/brotli",
	"github.com/pierrec/lz4", "github.com/DataDog/zstd", "github.com/DataDog/dd-trace-go",
}
