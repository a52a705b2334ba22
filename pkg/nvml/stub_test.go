//go:build !(linux && cgo)

package nvml

import (
	"errors"
	"testing"
)

func TestStubAnswersNotBuilt(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	if _, err := s.Status(); !errors.Is(err, ErrNotBuilt) || err.Error() != "NVML is not available on this build (it needs linux and cgo)" {
		t.Errorf("Status: %v", err)
	}
	if _, _, err := s.Devices(); !errors.Is(err, ErrNotBuilt) {
		t.Errorf("Devices: %v", err)
	}
	if _, _, err := s.Processes(); !errors.Is(err, ErrNotBuilt) {
		t.Errorf("Processes: %v", err)
	}
	if _, _, err := s.XIDs(); !errors.Is(err, ErrNotBuilt) {
		t.Errorf("XIDs: %v", err)
	}
	if _, _, err := s.Series(); !errors.Is(err, ErrNotBuilt) {
		t.Errorf("Series: %v", err)
	}
}
