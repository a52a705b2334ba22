package models

// JoinSettings holds the how spans map to hosts and GPUs, and where data links point.
type JoinSettings struct{}

// loadJoin reads the JoinSettings keys of jsonData; it returns the first invalid one, naming its key.
func loadJoin(j jsonFields, out *JoinSettings) error {
	return nil
}
