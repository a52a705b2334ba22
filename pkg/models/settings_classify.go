package models

// ClassifySettings holds the thresholds of the GPU workload classification.
type ClassifySettings struct{}

// loadClassify reads the ClassifySettings keys of jsonData; it returns the first invalid one, naming its key.
func loadClassify(j jsonFields, out *ClassifySettings) error {
	return nil
}
