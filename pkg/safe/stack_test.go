package safe

import (
	"testing"
	"unsafe"
)

// stackMoves runs deep work on a new goroutine and says whether its stack was copied by
// GrowStack (when grow) and by the work after it: a stack that grows is copied whole to a new
// place, so a local's address moves exactly when its stack was copied.
func stackMoves(t *testing.T, grow bool) (byGrow, byWork bool) {
	t.Helper()
	done := make(chan [2]bool)
	go func() {
		var mark byte
		at := func() uintptr { return uintptr(unsafe.Pointer(&mark)) }
		start := at()
		if grow {
			GrowStack()
		}
		grown := at()
		deep(stackReserve / 1024 * 3 / 4) // three quarters of the reserve, 1 KiB a frame
		done <- [2]bool{grown != start, at() != grown}
	}()
	moved := <-done
	return moved[0], moved[1]
}

// deep calls itself n times, each call with a 1 KiB frame.
//
//go:noinline
func deep(n int) byte {
	var frame [1024]byte
	frame[n%len(frame)] = byte(n)
	if n == 0 {
		return frame[0]
	}
	return deep(n-1) + frame[n%len(frame)]
}

func TestGrowStackCopiesTheStackOnceForTheWorkAfterIt(t *testing.T) {
	// Without it, work that runs deep grows a new goroutine's small stack as it goes (the copies
	// GrowStack is there to spare; if this fails, goroutines start big enough and it is moot).
	if _, byWork := stackMoves(t, false); !byWork {
		t.Fatal("a new goroutine ran 18 KiB deep without its stack growing")
	}
	byGrow, byWork := stackMoves(t, true)
	if !byGrow {
		t.Error("GrowStack did not grow the stack")
	}
	if byWork {
		t.Error("after GrowStack, work within its reserve still grew the stack")
	}
}
