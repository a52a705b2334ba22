package buckets

import (
	"context"
	"strings"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// (Azure's client asks for its container as it is made: the plugin opens buckets on first use.)
func TestOpenMakesTheS3AndFilesystemClientsWithoutCallingThem(t *testing.T) {
	for _, b := range []models.KernelBucket{
		{Name: "local", Provider: models.ProviderFilesystem, Directory: t.TempDir()},
		{Name: "bed", Provider: models.ProviderS3, Bucket: "traces", Endpoint: "127.0.0.1:1", Insecure: true, AccessKey: "AKIA-SECRET", SecretKey: "secret-key-value"},
		{Name: "aws", Provider: models.ProviderS3, Bucket: "traces", Region: "eu-west-1"},
	} {
		bkt, err := Open(context.Background(), b)
		if err != nil {
			t.Errorf("%s: %v", b.Name, err)
			continue
		}
		bkt.Close()
	}
}

func TestOpenErrorsNameTheProviderAndNeverACredential(t *testing.T) {
	secret := `{"type":"service_account","private_key":"VERY-SECRET-PRIVATE-KEY"`
	_, err := Open(context.Background(), models.KernelBucket{Name: "g", Provider: models.ProviderGCS, Bucket: "b", ServiceAccount: secret})
	if err == nil || !strings.HasPrefix(err.Error(), "cannot make its gcs client: ") || strings.Contains(err.Error(), "VERY-SECRET") {
		t.Fatalf("%v", err)
	}
	if got := Redact("key AKIA-1234 refused", []string{"AKIA-1234", "ab"}); got != "key [redacted] refused" {
		t.Fatalf("Redact: %q", got)
	}
}
