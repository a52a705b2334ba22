package testbed

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// process is one server the test bed started; its output goes to a log file in the bed's folder.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan error
	// grace, when set, replaces the bed's grace period between SIGTERM and SIGKILL.
	grace time.Duration
}

func startProcess(name, dir string, env []string, bin string, args ...string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = append(os.Environ(), env...)
	// Own process group, so Stop reaches the server's children too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan error, 1)}
	go func() {
		p.done <- cmd.Wait()
		logFile.Close()
	}()
	return p, nil
}

// stop asks the process group to end (SIGTERM) and kills the whole group (SIGKILL) after grace
// (p.grace when set); once the leader has ended it kills whatever is left of its group too, so
// no child outlives the bed. It returns when the leader has been reaped.
func (p *process) stop(grace time.Duration) {
	if p == nil || p.cmd.Process == nil {
		return
	}
	if p.grace > 0 {
		grace = p.grace
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		err := <-p.done
		p.done <- err
	}
	// The leader is gone; members of its group that ignored SIGTERM are not.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// exited reports whether the process has already ended, and how.
func (p *process) exited() (bool, error) {
	select {
	case err := <-p.done:
		p.done <- err
		return true, err
	default:
		return false, nil
	}
}

// tail returns the end of the process log, for error messages.
func (p *process) tail() string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// waitReady polls url until check accepts the reply, the process dies, or ctx ends.
func (p *process) waitReady(ctx context.Context, url string, check func(status int, body []byte) bool) error {
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		if dead, err := p.exited(); dead {
			return fmt.Errorf("%s exited before it was ready (%v); log %s:\n%s", p.name, err, p.log, p.tail())
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if res, err := client.Do(req); err == nil {
			body := make([]byte, 4096)
			n, _ := res.Body.Read(body)
			res.Body.Close()
			if check(res.StatusCode, body[:n]) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s: %w; log %s:\n%s", p.name, url, ctx.Err(), p.log, p.tail())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// freePorts reserves n distinct free loopback ports. The listeners are closed just before the
// servers start; the window in which another program could take a port is tiny on a test box.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// FreePorts reserves n distinct free loopback ports for a server a test starts itself.
func FreePorts(n int) ([]int, error) { return freePorts(n) }
