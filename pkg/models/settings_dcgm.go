package models

// DCGMSettings holds the metric and label names of the DCGM series, overridable per data source.
type DCGMSettings struct{}

// loadDCGM reads the DCGMSettings keys of jsonData; it returns the first invalid one, naming its key.
func loadDCGM(j jsonFields, out *DCGMSettings) error {
	return nil
}
