package classify

import (
	"slices"
	"testing"
)

func TestGPUNamesSayWhichMIGInstance(t *testing.T) {
	whole := GPU{Host: "gpu-node-1", Index: "0", UUID: "GPU-5fd4", Model: "NVIDIA A100-SXM4-40GB"}
	mig := whole
	mig.MIG, mig.MIGProfile = "3", "1g.10gb"
	noProfile := whole
	noProfile.MIG = "3"
	cases := []struct {
		g                         GPU
		str, name, device, onHost string
	}{
		{whole, "gpu-node-1 GPU 0 (NVIDIA A100-SXM4-40GB)", "gpu-node-1/0", "0", "GPU 0"},
		{mig, "gpu-node-1 GPU 0 (NVIDIA A100-SXM4-40GB) MIG 1g.10gb #3", "gpu-node-1/0 MIG 1g.10gb #3", "0 MIG 1g.10gb #3", "GPU 0 MIG 1g.10gb #3"},
		{noProfile, "gpu-node-1 GPU 0 (NVIDIA A100-SXM4-40GB) MIG #3", "gpu-node-1/0 MIG #3", "0 MIG #3", "GPU 0 MIG #3"},
		{GPU{Host: "h", UUID: "GPU-x"}, "h GPU-x", "h/GPU-x", "GPU-x", "GPU-x"},
		{GPU{}, "GPU", "", "", ""},
	}
	for _, c := range cases {
		if got := c.g.String(); got != c.str {
			t.Errorf("String() = %q, want %q", got, c.str)
		}
		if got := c.g.Name(); got != c.name {
			t.Errorf("Name() = %q, want %q", got, c.name)
		}
		if got := c.g.Device(); got != c.device {
			t.Errorf("Device() = %q, want %q", got, c.device)
		}
		if got := c.g.OnHost(); got != c.onHost {
			t.Errorf("OnHost() = %q, want %q", got, c.onHost)
		}
	}
}

func TestGPUIdentityKeepsMIGInstancesApart(t *testing.T) {
	one := GPU{Host: "gpu-node-1", Index: "0", UUID: "GPU-5fd4", Model: "NVIDIA A100-SXM4-40GB", MIG: "1", MIGProfile: "3g.20gb"}
	two := one
	two.MIG, two.MIGProfile = "2", "1g.5gb"
	m := map[GPU]string{one: "compute-bound", two: "idle"}
	if len(m) != 2 || m[one] != "compute-bound" || m[two] != "idle" {
		t.Errorf("two MIG instances of one GPU share a key: %v", m)
	}
	// Whole GPU first, then instances by number (10 after 2), then the next GPU.
	gpus := []GPU{{Host: "h", Index: "1"}, {Host: "h", Index: "0", MIG: "10"}, {Host: "h", Index: "0", MIG: "2"}, {Host: "h", Index: "0"}, {Host: "a", Index: "10"}}
	slices.SortFunc(gpus, GPU.Compare)
	var names []string
	for _, g := range gpus {
		names = append(names, g.Name())
	}
	if want := []string{"a/10", "h/0", "h/0 MIG #2", "h/0 MIG #10", "h/1"}; !slices.Equal(names, want) {
		t.Errorf("order %v, want %v", names, want)
	}
}

func TestGPUMatchesAServicesNameForIt(t *testing.T) {
	inst := GPU{Host: "h", Index: "0", UUID: "GPU-5fd4", MIG: "2", MIGProfile: "1g.5gb"}
	whole := GPU{Host: "h", Index: "0", UUID: "GPU-5fd4"}
	for _, c := range []struct {
		name        string
		inst, whole bool
	}{
		{"0", true, true},                 // the index names the GPU and every instance on it
		{"GPU-5fd4", true, true},          // so does the UUID
		{"MIG-GPU-5fd4/2/0", true, false}, // the MIG device name: one instance
		{"MIG-GPU-5fd4/2", true, false},
		{"MIG-GPU-5fd4/1/0", false, false},                         // another instance
		{"MIG-GPU-9999/2/0", false, false},                         // another GPU's
		{"MIG-b6ba6b2a-1cd4-5f1e-9f3b-0123456789ab", false, false}, // R470+ names: not in DCGM's labels
		{"1", false, false},
		{"", false, false},
	} {
		if got := inst.Matches(c.name); got != c.inst {
			t.Errorf("instance matches %q: %v, want %v", c.name, got, c.inst)
		}
		if got := whole.Matches(c.name); got != c.whole {
			t.Errorf("whole GPU matches %q: %v, want %v", c.name, got, c.whole)
		}
	}
}
