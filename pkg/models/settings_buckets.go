package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Bucket providers of jsonData.kernelBuckets (thanos-io/objstore's providers of the same names).
const (
	ProviderS3         = "s3"
	ProviderGCS        = "gcs"
	ProviderAzure      = "azure"
	ProviderFilesystem = "filesystem"
)

// MaxKernelBuckets bounds jsonData.kernelBuckets.
const MaxKernelBuckets = 16

// DefaultBucketTimeout is a bucket's timeoutSeconds when unset.
const DefaultBucketTimeout = 30 * time.Second

// Timeout is the bucket's timeout for one listing, attributes or open.
func (b KernelBucket) Timeout() time.Duration {
	if b.TimeoutSeconds == 0 {
		return DefaultBucketTimeout
	}
	return time.Duration(b.TimeoutSeconds) * time.Second
}

// KernelBucket is one object-storage bucket (or container) kernel traces are read from, beside
// the trace directories (jsonData.kernelBuckets, one item). Its credentials come from
// secureJsonData only (kernelBucket.<name>.accessKey, …); they are never logged, returned or put
// in frames, and String leaves them out.
type KernelBucket struct {
	Name      string `json:"name"`      // how messages and file references name it: bucket:<name>/<key>
	Provider  string `json:"provider"`  // s3, gcs, azure or filesystem
	Bucket    string `json:"bucket"`    // the bucket (s3, gcs) or container (azure)
	Prefix    string `json:"prefix"`    // only objects under it are listed and read; no leading or trailing /
	Endpoint  string `json:"endpoint"`  // s3: host[:port] of an S3-compatible store; azure: the endpoint suffix
	Region    string `json:"region"`    // s3
	Account   string `json:"account"`   // azure: the storage account
	Insecure  bool   `json:"insecure"`  // s3: plain HTTP (an on-premises store)
	Directory string `json:"directory"` // filesystem: an absolute directory standing in for a bucket
	// TimeoutSeconds bounds one listing, one object's attributes or open (1 to 300; 0 takes
	// DefaultBucketTimeout). The read of an object's body has the query's own deadline.
	TimeoutSeconds int `json:"timeoutSeconds"`

	AccessKey         string `json:"-"` // s3, secureJsonData kernelBucket.<name>.accessKey
	SecretKey         string `json:"-"` // s3, secureJsonData kernelBucket.<name>.secretKey
	ServiceAccount    string `json:"-"` // gcs service account JSON, secureJsonData kernelBucket.<name>.serviceAccount
	StorageAccountKey string `json:"-"` // azure, secureJsonData kernelBucket.<name>.storageAccountKey
}

// String names the bucket without its credentials.
func (b KernelBucket) String() string {
	return fmt.Sprintf("%s (%s %s/%s)", b.Name, b.Provider, b.Bucket+b.Directory, b.Prefix)
}

// GoString keeps %#v from printing the credentials too.
func (b KernelBucket) GoString() string { return "models.KernelBucket{" + b.String() + "}" }

// Secrets are the bucket's credentials that are set, to redact from any message.
func (b KernelBucket) Secrets() []string {
	var out []string
	for _, s := range []string{b.AccessKey, b.SecretKey, b.ServiceAccount, b.StorageAccountKey} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// SecureKey is the secureJsonData key of one of a bucket's credentials (accessKey, secretKey,
// serviceAccount, storageAccountKey).
func SecureKey(bucket, credential string) string { return "kernelBucket." + bucket + "." + credential }

var bucketName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// loadKernelBuckets reads jsonData.kernelBuckets and each bucket's credentials; errors name the
// key and the item, never a credential.
func loadKernelBuckets(j jsonFields, secure map[string]string) ([]KernelBucket, error) {
	raw, ok := j["kernelBuckets"]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errors.New(`jsonData.kernelBuckets must be a list of buckets, such as [{"name":"fleet","provider":"s3","bucket":"traces"}]`)
	}
	if len(items) > MaxKernelBuckets {
		return nil, fmt.Errorf("jsonData.kernelBuckets lists %d buckets; at most %d", len(items), MaxKernelBuckets)
	}
	var (
		out  []KernelBucket
		errs []error
		seen = map[string]bool{}
	)
	for i, item := range items {
		var b KernelBucket
		dec := json.NewDecoder(strings.NewReader(string(item)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&b); err != nil {
			errs = append(errs, fmt.Errorf("jsonData.kernelBuckets item %d must be an object with name, provider, bucket, prefix, endpoint, region, account, insecure, directory and timeoutSeconds: %s", i+1, truncate(err.Error(), 80)))
			continue
		}
		where := fmt.Sprintf("jsonData.kernelBuckets item %d", i+1)
		if b.Name != "" {
			where += fmt.Sprintf(" (%q)", truncate(b.Name, 64))
		}
		if err := checkKernelBucket(&b); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		if seen[b.Name] {
			errs = append(errs, fmt.Errorf("%s: the name is used by an earlier bucket; each bucket needs its own name", where))
			continue
		}
		seen[b.Name] = true
		b.AccessKey = secure[SecureKey(b.Name, "accessKey")]
		b.SecretKey = secure[SecureKey(b.Name, "secretKey")]
		b.ServiceAccount = secure[SecureKey(b.Name, "serviceAccount")]
		b.StorageAccountKey = secure[SecureKey(b.Name, "storageAccountKey")]
		if b.Provider == ProviderS3 && (b.AccessKey == "") != (b.SecretKey == "") {
			errs = append(errs, fmt.Errorf("%s: set both secureJsonData.%s and .secretKey, or neither", where, SecureKey(b.Name, "accessKey")))
			continue
		}
		out = append(out, b)
	}
	return out, errors.Join(errs...)
}

// checkKernelBucket checks one item's own fields and trims them.
func checkKernelBucket(b *KernelBucket) error {
	b.Name, b.Provider, b.Bucket = strings.TrimSpace(b.Name), strings.ToLower(strings.TrimSpace(b.Provider)), strings.TrimSpace(b.Bucket)
	b.Endpoint, b.Region, b.Account = strings.TrimSpace(b.Endpoint), strings.TrimSpace(b.Region), strings.TrimSpace(b.Account)
	b.Prefix = strings.Trim(strings.TrimSpace(b.Prefix), "/")
	switch {
	case b.Name == "":
		return errors.New("name is missing: give each bucket a short name (letters, digits, . _ -)")
	case !bucketName.MatchString(b.Name):
		return fmt.Errorf("name %q must be at most 63 letters, digits, '.', '_' or '-', starting with a letter or digit", truncate(b.Name, 64))
	}
	switch b.Provider {
	case ProviderS3, ProviderGCS, ProviderAzure:
		if b.Bucket == "" {
			return fmt.Errorf("bucket is missing: the %s bucket (or azure container) to read", b.Provider)
		}
		if b.Directory != "" {
			return errors.New("directory is for the filesystem provider only")
		}
	case ProviderFilesystem:
		d := strings.TrimSpace(b.Directory)
		if d == "" || !filepath.IsAbs(d) || strings.ContainsRune(d, 0) {
			return fmt.Errorf("directory must be an absolute path for the filesystem provider, got %q", truncate(d, 80))
		}
		b.Directory = filepath.Clean(d)
	case "":
		return errors.New("provider is missing: use s3, gcs, azure or filesystem")
	default:
		return fmt.Errorf("unknown provider %q: use s3, gcs, azure or filesystem", truncate(b.Provider, 20))
	}
	if b.TimeoutSeconds < 0 || b.TimeoutSeconds > int(MaxTimeout.Seconds()) {
		return fmt.Errorf("timeoutSeconds must be between 1 and %d (0 or unset: %d), got %d", int(MaxTimeout.Seconds()), int(DefaultBucketTimeout.Seconds()), b.TimeoutSeconds)
	}
	if b.Insecure && b.Provider != ProviderS3 {
		return errors.New("insecure is for the s3 provider only")
	}
	if b.Provider == ProviderAzure && b.Account == "" {
		return errors.New("account is missing: the azure storage account")
	}
	if b.Prefix != "" {
		if strings.ContainsRune(b.Prefix, 0) || path.Clean(b.Prefix) != b.Prefix || b.Prefix == ".." || strings.HasPrefix(b.Prefix, "../") || strings.Contains(b.Prefix, "/../") {
			return fmt.Errorf("prefix %q must be a plain key prefix such as traces/ (no //, . or .. parts)", truncate(b.Prefix, 80))
		}
	}
	return nil
}
