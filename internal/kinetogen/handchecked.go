package kinetogen

import "io"

// HandCheckedTraceID is the request trace ID the hand-checked trace's annotation names.
const HandCheckedTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"

// WriteHandChecked writes the hand-checked trace the readers' and analyses' tests share (old:
// Kineto's old category spellings). Times are µs after the base:
//
//	stream 7: gemm [10,30] (launch [0,5]), gemm [40,70] (launch [6,10]), relu [90,92]
//	          (launch [80,85]), Memcpy HtoD pageable [95,105] 1 MB (launch [92,95])
//	stream 8: ncclKernel_AllReduce [60,100] (launch [50,52]), memset [100.020,101] 4096 B
//	          (no launch), gemm [110,120] (launch [95,97])
//	host:     cudaDeviceSynchronize [120,140] and its "Context Sync" record, cudaStreamWaitEvent
//	          [100,101] and its "Stream Wait Event" record, user_annotation "request <id>"
//	          [0,140] around user_annotation "forward" [45,90] (holding the launches of nccl
//	          and relu)
func WriteHandChecked(w io.Writer, old bool) error {
	const µs = 1000
	k := NewWriter(w, EpochBase, map[string]string{"backend": "nccl", "rank": "0", "world_size": "1"})
	k.Old = old
	k.Span("user_annotation", "request "+HandCheckedTraceID, 0, 140*µs)
	k.Span("cpu_op", "aten::mm", 0, 12*µs)
	k.Span("user_annotation", "forward", 45*µs, 90*µs)
	k.Runtime("cudaLaunchKernel", 0, 5*µs, 1)
	k.Runtime("cudaLaunchKernel", 6*µs, 10*µs, 2)
	k.Kernel("gemm", 7, 10*µs, 30*µs, 1)
	k.Kernel("gemm", 7, 40*µs, 70*µs, 2)
	k.Runtime("cudaLaunchKernel", 50*µs, 52*µs, 5)
	k.Kernel("ncclKernel_AllReduce", 8, 60*µs, 100*µs, 5)
	k.Runtime("cudaLaunchKernel", 80*µs, 85*µs, 3)
	k.Kernel("relu", 7, 90*µs, 92*µs, 3)
	k.Runtime("cudaMemcpyAsync", 92*µs, 95*µs, 4)
	k.Memcpy("Memcpy HtoD (Pageable -> Device)", 7, 95*µs, 105*µs, 4, 1_000_000)
	k.Memset(8, 100*µs+20, 101*µs, 0, 4096)
	k.Runtime("cudaLaunchKernel", 95*µs, 97*µs, 7)
	k.Kernel("gemm", 8, 110*µs, 120*µs, 7)
	k.Sync("cudaStreamWaitEvent", "Stream Wait Event", 8, 100*µs, 101*µs, 8)
	k.Sync("cudaDeviceSynchronize", "Context Sync", 7, 120*µs, 140*µs, 9)
	k.Span("mystery_category", "who knows", 1, 2)
	return k.Close("yolo26_detect", 140*µs)
}
