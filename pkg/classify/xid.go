package classify

// XIDs are the driver's error codes (NVML's events, DCGM_FI_DEV_XID_ERRORS): what they mean
// and what to do is NVIDIA's catalogue, read the same whichever source reported them.

// xidInfo is what NVIDIA's XID catalogue says of an XID, shortened.
type xidInfo struct{ meaning, action string }

var xids = map[uint64]xidInfo{
	8:   {"GPU stopped processing (channel timeout)", "check the application; reset the GPU if it repeats"},
	13:  {"graphics engine exception (illegal instruction, out-of-range address)", "usually an application bug: run it under compute-sanitizer"},
	31:  {"GPU memory page fault (illegal address)", "usually an application bug: run it under compute-sanitizer"},
	32:  {"invalid or corrupted push buffer stream", "check the PCIe link and driver; reset the GPU if it repeats"},
	38:  {"driver firmware error", "update the driver; reset the GPU"},
	43:  {"GPU stopped processing (user application fault)", "the faulting application was stopped; others keep running"},
	44:  {"graphics engine fault during context switch", "reset the GPU"},
	45:  {"preemptive cleanup after previous errors (process killed)", "look for the XID before it"},
	48:  {"double-bit ECC error", "uncorrectable memory error: drain and reset the GPU"},
	61:  {"internal micro-controller breakpoint/warning", "reset the GPU; report if it repeats"},
	62:  {"internal micro-controller halt", "reset the GPU"},
	63:  {"ECC page retirement or row remapping recorded", "reset the GPU to apply the remap when convenient"},
	64:  {"ECC page retirement or row remapping failed", "reset the GPU; replace it if it repeats"},
	68:  {"video processor (NVDEC/NVENC) exception", "reset the GPU"},
	69:  {"graphics engine class error", "usually an application or driver bug"},
	74:  {"NVLink error", "check the NVLink and fabric manager; reset the GPU"},
	79:  {"GPU has fallen off the bus", "the GPU is unreachable: reboot the host, check power and PCIe"},
	92:  {"high single-bit ECC error rate", "watch the ECC counts; plan a reset"},
	94:  {"contained ECC error", "only the affected application must restart"},
	95:  {"uncontained ECC error", "every application on the GPU is affected: drain and reset the GPU"},
	109: {"context switch timeout", "check the application; reset the GPU if it repeats"},
	119: {"GSP RPC timeout", "reset the GPU; update the driver if it repeats"},
	120: {"GSP error", "reset the GPU; update the driver if it repeats"},
}

// XIDMeaning returns the meaning and recommended action of an XID, or "unlisted XID" with a
// pointer to NVIDIA's catalogue.
func XIDMeaning(xid uint64) (meaning, action string) {
	if i, ok := xids[xid]; ok {
		return i.meaning, i.action
	}
	return "unlisted XID", "see NVIDIA's XID catalogue (docs.nvidia.com/deploy/xid-errors)"
}
