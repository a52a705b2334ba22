// Package buckets opens the object-storage buckets of jsonData.kernelBuckets through
// thanos-io/objstore's providers (s3, gcs, azure, filesystem): the settings' fields and
// secureJsonData's credentials go into each provider's own Config, in memory only, and nothing
// of them is logged.
package buckets

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-kit/log"
	"github.com/thanos-io/objstore"
	"github.com/thanos-io/objstore/providers/azure"
	"github.com/thanos-io/objstore/providers/filesystem"
	"github.com/thanos-io/objstore/providers/gcs"
	"github.com/thanos-io/objstore/providers/s3"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// maxRetries bounds the retries of one call: a query waits on a bucket that is down for
// seconds, not for the provider's default ten tries.
const maxRetries = 2

// component is how the providers name the plugin in their user agent.
const component = "hsi-profiling"

// Open makes the client of one bucket (azure's asks for its container; the others call
// nothing yet). Its errors never carry a credential.
func Open(ctx context.Context, b models.KernelBucket) (objstore.Bucket, error) {
	bkt, err := open(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("cannot make its %s client: %s", b.Provider, Redact(err.Error(), b.Secrets()))
	}
	return bkt, nil
}

func open(ctx context.Context, b models.KernelBucket) (objstore.Bucket, error) {
	logger := log.NewNopLogger() // the providers' logs could carry their configuration
	switch b.Provider {
	case models.ProviderS3:
		c := s3.DefaultConfig
		c.Bucket, c.Region, c.Insecure = b.Bucket, b.Region, b.Insecure
		c.Endpoint = b.Endpoint
		if c.Endpoint == "" {
			c.Endpoint = "s3.amazonaws.com"
			if b.Region != "" {
				c.Endpoint = "s3." + b.Region + ".amazonaws.com"
			}
		}
		c.AccessKey, c.SecretKey = b.AccessKey, b.SecretKey
		c.MaxRetries = maxRetries
		return s3.NewBucketWithConfig(logger, c, component, nil)
	case models.ProviderGCS:
		c := gcs.DefaultConfig
		c.Bucket, c.ServiceAccount = b.Bucket, b.ServiceAccount
		c.MaxRetries = maxRetries
		return gcs.NewBucketWithConfig(ctx, logger, c, component, nil)
	case models.ProviderAzure:
		c := azure.DefaultConfig
		c.ContainerName, c.StorageAccountName, c.StorageAccountKey = b.Bucket, b.Account, b.StorageAccountKey
		c.MaxRetries = maxRetries
		if b.Endpoint != "" {
			c.Endpoint = b.Endpoint
		}
		return azure.NewBucketWithConfig(logger, c, component, nil)
	case models.ProviderFilesystem:
		return filesystem.NewBucket(b.Directory)
	}
	return nil, fmt.Errorf("unknown provider %q", b.Provider)
}

// Redact replaces every secret in text.
func Redact(text string, secrets []string) string {
	for _, s := range secrets {
		if len(s) >= 4 { // shorter ones would redact ordinary words
			text = strings.ReplaceAll(text, s, "[redacted]")
		}
	}
	return text
}
