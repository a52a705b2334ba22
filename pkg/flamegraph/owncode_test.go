package flamegraph

import (
	"strings"
	"testing"
)

func TestIsLibraryFrame(t *testing.T) {
	cases := []struct {
		rule string
		name string
		lib  bool
	}{
		// Go: main and the service's own module.
		{"go main", "main.dbQuery", false},
		{"go main method", "main.(*server).ServeHTTP", false},
		{"go main closure", "main.handleDetect.func1", false},
		{"go main generic", "main.mapSlice[go.shape.string]", false},
		{"go own module", "example.com/svc/internal/db.Query", false},
		{"go own github module", "github.com/acme/checkout/internal/cart.(*Cart).Total", false},
		{"go own dotless module", "checkout/internal/db.(*Store).Get", false},
		// Go: runtime and standard library.
		{"go runtime", "runtime.mallocgc", true},
		{"go runtime subpackage", "runtime/internal/syscall.Syscall6", true},
		{"go runtime asm", "runtime.memmove", true},
		{"go std method", "net/http.(*conn).serve", true},
		{"go std", "encoding/json.Marshal", true},
		{"go std single element", "sync.(*Mutex).Lock", true},
		{"go std syscall", "syscall.Syscall", true},
		{"go std crypto", "crypto/sha256.(*Digest).Write", true},
		{"go std internal", "crypto/internal/fips140/sha256.blockSHANI", true},
		{"go std internal poll", "internal/poll.(*FD).Read", true},
		{"go std vendored", "vendor/golang.org/x/net/http2/hpack.(*Decoder).Write", true},
		{"go std generic", "slices.SortFunc[go.shape.[]string,go.shape.string]", true},
		{"go compiler generated", "type:.eq.main.request", true},
		{"go compiler generated old", "type..hash.net/http.Header", true},
		// Go: well-known dependencies.
		{"go x", "golang.org/x/net/http2.(*Framer).ReadFrame", true},
		{"go pq", "github.com/lib/pq.(*conn).query", true},
		{"go pgx major version", "github.com/jackc/pgx/v5/pgconn.(*PgConn).Exec", true},
		{"go grpc", "google.golang.org/grpc.(*Server).handleStream", true},
		{"go otel", "go.opentelemetry.io/otel/sdk/trace.(*batchSpanProcessor).processQueue", true},
		{"go pyroscope", "github.com/grafana/pyroscope-go/godeltaprof.(*HeapProfiler).Profile", true},
		{"go prometheus", "github.com/prometheus/client_golang/prometheus.(*Registry).Gather", true},
		{"go gin", "github.com/gin-gonic/gin.(*Engine).ServeHTTP", true},
		{"go echo", "github.com/labstack/echo/v4.(*Echo).ServeHTTP", true},
		{"go fasthttp", "github.com/valyala/fasthttp.(*Server).serveConn", true},
		{"go zap", "go.uber.org/zap.(*Logger).Info", true},
		{"go gopkg.in escaped", "gopkg.in/yaml%2ev3.(*decoder).unmarshal", true},
		{"go gopkg.in dotted", "gopkg.in/yaml.v3.(*parser).parse", true},
		{"go not a prefix of a root", "github.com/libx/pq.Query", false},
		// Python: own files.
		{"python relative", "handle (app/server.py:42)", false},
		{"python no line", "handle (app/server.py)", false},
		{"python bare own file", "<module> (app.py:1)", false},
		{"python absolute own", "predict (/srv/app/model.py:22)", false},
		{"python windows own", `predict (C:\svc\app\model.py:22)`, false},
		// Python: interpreter, standard library, third party.
		{"python site-packages", "forward (/usr/local/lib/python3.11/site-packages/torch/nn/modules/module.py:1501)", true},
		{"python dist-packages", "forward (/usr/lib/python3/dist-packages/torch/nn/modules/module.py:1501)", true},
		{"python venv", "dispatch_request (/app/.venv/lib/python3.12/site-packages/flask/app.py:880)", true},
		{"python stdlib absolute", "<module> (/usr/lib/python3.11/runpy.py:86)", true},
		{"python stdlib local", "run (/usr/local/lib/python3.11/threading.py:975)", true},
		{"python stdlib conda", "select (/opt/conda/lib/python3.10/selectors.py:469)", true},
		{"python stdlib windows", `run (C:\Python311\Lib\threading.py:975)`, true},
		{"python stdlib bare", "_bootstrap (threading.py:995)", true},
		{"python stdlib bare inner", "_bootstrap_inner (threading.py:1038)", true},
		{"python stdlib package", "run_forever (asyncio/base_events.py:608)", true},
		{"python stdlib nested package", "_worker (concurrent/futures/thread.py:83)", true},
		{"python stdlib socketserver", "serve_forever (socketserver.py:233)", true},
		{"python stdlib selectors", "select (selectors.py:415)", true},
		{"python stdlib private", "__iter__ (_weakrefset.py:63)", true},
		{"python third party short", "forward (torch/nn/modules/module.py:1501)", true},
		{"python third party flask", "wsgi_app (flask/app.py:1484)", true},
		{"python frozen", "_find_and_load (<frozen importlib._bootstrap>:1176)", true},
		{"python built-in", "sleep (<built-in>)", true},
		{"python native module", "_PyEval_EvalFrameDefault (libpython3.11.so.1.0)", true},
		// Native, unknown, other runtimes.
		{"unknown", "[unknown]", true},
		{"kernel", "[kernel.kallsyms]", true},
		{"vdso", "[vdso]", true},
		{"empty", "", true},
		{"address", "0x7f3a2c1d9e40", true},
		{"libc", "libc.so.6", true},
		{"libc offset", "libc.so.6+0x29d90", true},
		{"shared object", "libtorch_cpu.so", true},
		{"c reserved", "__libc_start_main", true},
		{"c reserved capital", "_PyObject_MakeTpCall", true},
		{"thread entry", "start_thread", true},
		{"own native", "compute_histogram", false},
		{"java", "java.util.HashMap.get", true},
		{"java slashed", "java/lang/Thread.run", true},
		{"javax", "javax.servlet.http.HttpServlet.service", true},
		{"jdk", "jdk.internal.misc.Unsafe.park", true},
		{"sun", "sun.nio.ch.EPoll.wait", true},
		{"kotlin", "kotlin.collections.CollectionsKt.map", true},
		{"spring slashed", "org/springframework/web/servlet/DispatcherServlet.doDispatch", true},
		{"java own", "com.example.checkout.CartService.total", false},
		{"java own slashed", "com/example/checkout/CartService.total", false},
		{"dotnet", "System.Threading.Monitor.Enter", true},
		{"rust std", "std::io::Write::write_all", true},
		{"rust impl", "<alloc::vec::Vec<T> as core::clone::Clone>::clone", true},
		{"rust own", "checkout::cart::total", false},
	}
	for _, c := range cases {
		if got := IsLibraryFrame(c.name); got != c.lib {
			t.Errorf("%s: IsLibraryFrame(%q) = %v, want %v", c.rule, c.name, got, c.lib)
		}
	}
}

// ownStack is one call stack, root first, separated by ";", and its self value.
type ownStack struct {
	stack string
	self  int64
}

// ownTree builds a merged tree from stacks.
func ownTree(stacks ...ownStack) *Node {
	root := New()
	for _, s := range stacks {
		root.Total += s.self
		n := root
		for _, name := range strings.Split(s.stack, ";") {
			n = n.child(name)
			n.Total += s.self
		}
		n.Self += s.self
	}
	return root
}

func TestOwnFunction(t *testing.T) {
	demo := ownTree(
		ownStack{"main.main;net/http.(*Server).Serve;net/http.(*conn).serve;main.handleDetect;main.dbQuery;crypto/sha256.(*Digest).Write;crypto/internal/fips140/sha256.blockSHANI", 800},
		ownStack{"main.main;net/http.(*Server).Serve;net/http.(*conn).serve;main.handleDetect;main.render;crypto/sha256.(*Digest).Write;crypto/internal/fips140/sha256.blockSHANI", 50},
		ownStack{"main.main;net/http.(*Server).Serve;net/http.(*conn).serve;main.handleDetect;main.dbQuery;github.com/lib/pq.(*conn).query;runtime.mallocgc", 100},
		ownStack{"runtime.gcBgMarkWorker;runtime.gcDrain;runtime.scanobject", 120},
	)
	python := ownTree(
		ownStack{"<module> (app/server.py:1);serve_forever (socketserver.py:233);handle (app/server.py:10);predict (app/model.py:22);forward (/usr/lib/python3/dist-packages/torch/nn/modules/module.py:1501)", 90},
		ownStack{"<module> (app/server.py:1);serve_forever (socketserver.py:233);handle (app/server.py:10);json_response (app/server.py:30);dumps (/usr/lib/python3.11/json/__init__.py:231)", 10},
	)
	twoPaths := ownTree(
		ownStack{"main.handleUser;main.loadUser;database/sql.(*DB).QueryContext;github.com/lib/pq.(*conn).query;runtime.memmove", 30},
		ownStack{"main.handleReport;main.encodeReport;encoding/json.Marshal;runtime.memmove", 70},
	)
	twoPathsSwapped := ownTree(
		ownStack{"main.handleUser;main.loadUser;database/sql.(*DB).QueryContext;github.com/lib/pq.(*conn).query;runtime.memmove", 70},
		ownStack{"main.handleReport;main.encodeReport;encoding/json.Marshal;runtime.memmove", 30},
	)
	ownHot := ownTree(
		ownStack{"main.main;example.com/svc/internal/score.Compute;example.com/svc/internal/score.dot", 500},
		ownStack{"main.main;example.com/svc/internal/score.Compute;runtime.mallocgc", 20},
	)
	noOwn := ownTree(
		ownStack{"runtime.gcBgMarkWorker;runtime.gcDrain;runtime.scanobject", 300},
		ownStack{"runtime.goexit;net/http.(*conn).serve;net/http.serverHandler.ServeHTTP;runtime.mallocgc", 10},
	)
	// Built from levels, a tree may hold the same call path as unmerged siblings: they are one
	// path, 20+20 against the other path's 30.
	unmerged := &Node{Name: RootName, Total: 70, Children: []*Node{
		{Name: "main.a", Total: 20, Children: []*Node{{Name: "runtime.memmove", Total: 20, Self: 20}}},
		{Name: "main.b", Total: 30, Children: []*Node{{Name: "runtime.memmove", Total: 30, Self: 30}}},
		{Name: "main.a", Total: 20, Children: []*Node{{Name: "runtime.memmove", Total: 20, Self: 20}}},
	}}
	// Equal self: the larger total (fn's own callees) wins.
	tie := ownTree(
		ownStack{"main.small;sync.(*Mutex).Lock", 40},
		ownStack{"main.big;sync.(*Mutex).Lock", 40},
		ownStack{"main.big;sync.(*Mutex).Lock;runtime.lock2", 25},
	)
	// fn inside a library's recursion: the inner occurrence is still below main.walk.
	recursive := ownTree(
		ownStack{"main.walk;encoding/json.(*encodeState).reflectValue;encoding/json.(*encodeState).reflectValue", 60},
	)

	cases := []struct {
		desc string
		tree *Node
		fn   string
		want string
		ok   bool
	}{
		{"demo: sha256 under main.dbQuery", demo, "crypto/internal/fips140/sha256.blockSHANI", "main.dbQuery", true},
		{"demo: library caller", demo, "runtime.mallocgc", "main.dbQuery", true},
		{"demo: gc has no own frame", demo, "runtime.scanobject", "", false},
		{"python: torch under predict", python, "forward (/usr/lib/python3/dist-packages/torch/nn/modules/module.py:1501)", "predict (app/model.py:22)", true},
		{"python: stdlib json", python, "dumps (/usr/lib/python3.11/json/__init__.py:231)", "json_response (app/server.py:30)", true},
		{"two paths: heavier wins", twoPaths, "runtime.memmove", "main.encodeReport", true},
		{"two paths: heavier wins, swapped", twoPathsSwapped, "runtime.memmove", "main.loadUser", true},
		{"fn is own code", ownHot, "example.com/svc/internal/score.dot", "example.com/svc/internal/score.dot", true},
		{"fn is own code in main", demo, "main.dbQuery", "main.dbQuery", true},
		{"no own code", noOwn, "runtime.scanobject", "", false},
		{"no own code on any path", noOwn, "runtime.mallocgc", "", false},
		{"unmerged siblings are one path", unmerged, "runtime.memmove", "main.a", true},
		{"equal self: larger total", tie, "sync.(*Mutex).Lock", "main.big", true},
		{"recursion", recursive, "encoding/json.(*encodeState).reflectValue", "main.walk", true},
		{"fn not in tree", demo, "main.absent", "", false},
		{"empty fn", demo, "", "", false},
		{"root is not a frame", demo, RootName, "", false},
		{"empty tree", New(), "runtime.mallocgc", "", false},
		{"nil tree", nil, "runtime.mallocgc", "", false},
	}
	for _, c := range cases {
		got, ok := OwnFunction(c.tree, c.fn)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: OwnFunction(%q) = %q, %v; want %q, %v", c.desc, c.fn, got, ok, c.want, c.ok)
		}
	}
}

// The demo's hot function, found as the plugin finds it (largest self value over the tree), leads
// to main.dbQuery.
func TestOwnFunctionOfTheHotFunction(t *testing.T) {
	tree := ownTree(
		ownStack{"main.handleDetect;main.dbQuery;crypto/sha256.(*Digest).Write;crypto/internal/fips140/sha256.blockSHANI", 700},
		ownStack{"main.handleDetect;main.dbQuery;github.com/lib/pq.(*conn).query;runtime.mallocgc", 90},
		ownStack{"main.handleDetect;main.decode;encoding/json.(*decodeState).object", 60},
	)
	hot, best := "", int64(0)
	for name, v := range tree.ByFunction() {
		if v.Self > best {
			hot, best = name, v.Self
		}
	}
	if hot != "crypto/internal/fips140/sha256.blockSHANI" {
		t.Fatalf("hot function %q", hot)
	}
	if got, ok := OwnFunction(tree, hot); got != "main.dbQuery" || !ok {
		t.Errorf("OwnFunction(%q) = %q, %v; want main.dbQuery, true", hot, got, ok)
	}
}
