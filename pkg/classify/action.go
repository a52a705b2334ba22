package classify

// actions are the seeds' recommendations, quoted as closely as a table cell allows; where a seed
// says nothing (power throttling, balanced, no data) the text says what to check and that it is
// not from the seeds.
var actions = map[Class]string{
	ComputeBound: "GPU busy calculating, memory not the bottleneck: optimise by quantization, pruning, smaller models (seed 001); " +
		"if already efficient, use faster GPUs or speculative decoding to cut compute per token (seed 003 Pattern 3)",
	MemoryBound: "GPU waiting for data, memory bus saturated: smaller batch sizes, memory pooling, pinned memory (seed 001); " +
		"FP8 quantization or FP8 KV cache to cut data movement, tensor parallelism to aggregate bandwidth (seed 003 Pattern 2)",
	PCIeBound:        "too much data moving between CPU and GPU: batch more data, reduce CPU-GPU transfers (seed 001)",
	ThermalThrottled: "GPU overheating and reducing its clocks: improve cooling, reduce workload (seed 001)",
	PowerThrottled: "clocks capped by the power limit or power brake: check the enforced power limit and the board's power supply, " +
		"spread or reduce the workload (not in the seeds: DCGM clock-event bits 0x4/0x80)",
	Idle: "low GPU utilisation: increase the batch size (max_batch_size), check for a CPU bottleneck in data loading " +
		"(Python GIL markers), add parallelism, enable CUDA graphs to reduce launch overhead (seed 003 Pattern 1)",
	Balanced: "no single bottleneck: compute and memory are both in use; profile kernels (Nsight Systems) for the dominant " +
		"operations before changing hardware or batch sizes (seed 003)",
	NoData: "no DCGM figures: check that dcgm-exporter runs and is scraped (curl http://<host>:9400/metrics) and that the " +
		"NVIDIA driver is accessible (seed 001 troubleshooting)",
}

// Action returns the recommended action for a class, from the seeds.
func Action(c Class) string {
	if a, ok := actions[c]; ok {
		return a
	}
	return "unknown class " + string(c)
}
