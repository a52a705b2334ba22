package classify

// actions are the source guides' recommendations (the Continuous Profiling Guide, the TensorRT-LLM
// Nsight Systems guide), quoted as closely as a table cell allows and naming the guide; where a
// guide says nothing (power throttling) the text says what to check and that it is not from them.
var actions = map[Class]string{
	ComputeBound: "GPU busy calculating, memory not the bottleneck: optimise by quantization, pruning, smaller models (Continuous Profiling Guide); " +
		"if already efficient, use faster GPUs or speculative decoding to cut compute per token (TensorRT-LLM Nsight guide, pattern 3)",
	MemoryBound: "GPU waiting for data, memory bus saturated: smaller batch sizes, memory pooling, pinned memory (Continuous Profiling Guide); " +
		"FP8 quantization or FP8 KV cache to cut data movement, tensor parallelism to aggregate bandwidth (TensorRT-LLM Nsight guide, pattern 2)",
	PCIeBound:        "too much data moving between CPU and GPU: batch more data, reduce CPU-GPU transfers (Continuous Profiling Guide)",
	ThermalThrottled: "GPU overheating and reducing its clocks: improve cooling, reduce workload (Continuous Profiling Guide)",
	PowerThrottled: "clocks capped by the power limit or power brake: check the enforced power limit and the board's power supply, " +
		"spread or reduce the workload (not in the guides: DCGM clock-event bits 0x4/0x80)",
	Idle: "low GPU utilisation: increase the batch size (max_batch_size), check for a CPU bottleneck in data loading " +
		"(Python GIL markers), add parallelism, enable CUDA graphs to reduce launch overhead (TensorRT-LLM Nsight guide, pattern 1)",
	Balanced: "no single bottleneck: compute and memory are both in use; profile kernels (Nsight Systems) for the dominant " +
		"operations before changing hardware or batch sizes (TensorRT-LLM Nsight guide)",
	NoData: "no DCGM figures: check that dcgm-exporter runs and is scraped (curl http://<host>:9400/metrics) and that the " +
		"NVIDIA driver is accessible (Continuous Profiling Guide, troubleshooting)",
}

// Action returns the recommended action for a class, from the source guides.
func Action(c Class) string {
	if a, ok := actions[c]; ok {
		return a
	}
	return "unknown class " + string(c)
}
