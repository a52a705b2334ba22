package frames

import (
	"os"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/experimental"
)

// updateGolden rewrites golden files instead of comparing; set HSI_UPDATE_GOLDEN=1 on purpose,
// then review the diff.
var updateGolden = os.Getenv("HSI_UPDATE_GOLDEN") == "1"

func checkGolden(t *testing.T, name string, f *data.Frame) {
	t.Helper()
	if err := experimental.CheckGoldenFrame("testdata/"+name+".golden", f, updateGolden); err != nil {
		t.Error(err)
	}
}
