package models

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestKernelBucketsAreReadWithTheirCredentials(t *testing.T) {
	s := load(t, `{"kernelBuckets":[
		{"name":"fleet","provider":"S3","bucket":"traces","prefix":"/gpu/","endpoint":"seaweed:8333","region":"eu","insecure":true,"timeoutSeconds":5},
		{"name":"gcs-1","provider":"gcs","bucket":"b"},
		{"name":"az","provider":"azure","bucket":"c","account":"acct"},
		{"name":"local","provider":"filesystem","directory":"/data/bucket/"}]}`,
		map[string]string{"kernelBucket.fleet.accessKey": "AKIA-SECRET-1", "kernelBucket.fleet.secretKey": "s3cr3t-2", "kernelBucket.gcs-1.serviceAccount": `{"k":"gsecret"}`, "kernelBucket.az.storageAccountKey": "azsecret"})
	if s.bad.Kernels != nil {
		t.Fatal(s.bad.Kernels)
	}
	b := s.Kernels.Buckets
	if len(b) != 4 || b[0].Provider != "s3" || b[0].Prefix != "gpu" || !b[0].Insecure || b[0].AccessKey != "AKIA-SECRET-1" || b[0].SecretKey != "s3cr3t-2" ||
		b[1].ServiceAccount == "" || b[2].StorageAccountKey != "azsecret" || b[3].Directory != "/data/bucket" ||
		b[0].Timeout() != 5*time.Second || b[1].Timeout() != DefaultBucketTimeout {
		t.Fatalf("buckets: %v", b)
	}
	// Neither %v nor %+v nor %#v prints a credential.
	for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(f, b)
		for _, secret := range []string{"AKIA-SECRET-1", "s3cr3t-2", "gsecret", "azsecret"} {
			if strings.Contains(out, secret) {
				t.Errorf("%s prints %q: %s", f, secret, out)
			}
		}
	}
}

func TestKernelBucketSettingsNameTheKeyAndItem(t *testing.T) {
	many := strings.Repeat(`{"name":"x","provider":"s3","bucket":"b"},`, MaxKernelBuckets+1)
	for _, c := range []struct{ json, want string }{
		{`{"kernelBuckets":{}}`, "jsonData.kernelBuckets must be a list"},
		{`{"kernelBuckets":[` + strings.TrimSuffix(many, ",") + `]}`, "at most 16"},
		{`{"kernelBuckets":[{"name":"a","provider":"s4","bucket":"b"}]}`, `item 1 ("a"): unknown provider "s4"`},
		{`{"kernelBuckets":[{"name":"a","bucket":"b"}]}`, `item 1 ("a"): provider is missing`},
		{`{"kernelBuckets":[{"name":"a","provider":"s3"}]}`, `item 1 ("a"): bucket is missing`},
		{`{"kernelBuckets":[{"provider":"s3","bucket":"b"}]}`, `item 1: name is missing`},
		{`{"kernelBuckets":[{"name":"a/b","provider":"s3","bucket":"b"}]}`, `item 1 ("a/b"): name "a/b" must be`},
		{`{"kernelBuckets":[{"name":"a","provider":"s3","bucket":"b"},{"name":"a","provider":"gcs","bucket":"c"}]}`, `item 2 ("a"): the name is used by an earlier bucket`},
		{`{"kernelBuckets":[{"name":"a","provider":"gcs","bucket":"b","insecure":true}]}`, `item 1 ("a"): insecure is for the s3 provider only`},
		{`{"kernelBuckets":[{"name":"a","provider":"filesystem","directory":"rel"}]}`, `item 1 ("a"): directory must be an absolute path`},
		{`{"kernelBuckets":[{"name":"a","provider":"azure","bucket":"c"}]}`, `item 1 ("a"): account is missing`},
		{`{"kernelBuckets":[{"name":"a","provider":"s3","bucket":"b","prefix":"x/../y"}]}`, `item 1 ("a"): prefix "x/../y" must be a plain key prefix`},
		{`{"kernelBuckets":[{"name":"a","provider":"s3","bucket":"b","colour":"red"}]}`, `item 1 must be an object`},
		{`{"kernelBuckets":[{"name":"a","provider":"s3","bucket":"b","timeoutSeconds":301}]}`, `item 1 ("a"): timeoutSeconds must be between 1 and 300 (0 or unset: 30), got 301`},
		{`{"kernelBuckets":[{"name":"a","provider":"s3","bucket":"b","timeoutSeconds":-1}]}`, `item 1 ("a"): timeoutSeconds must be between 1 and 300`},
		{`{"kernelBuckets":[{"name":"a","provider":"s3","bucket":"b","timeoutSeconds":"5"}]}`, `item 1 must be an object`},
	} {
		s := load(t, c.json, nil)
		if s.bad.Kernels == nil || !strings.Contains(s.bad.Kernels.Error(), c.want) {
			t.Errorf("%.80s: err %v, want %q", c.json, s.bad.Kernels, c.want)
		}
	}
}

func TestKernelBucketErrorsNeverCarryACredential(t *testing.T) {
	secret := "very-secret-key-123"
	s := load(t, `{"kernelBuckets":[{"name":"a","provider":"s3","bucket":"b"}]}`, map[string]string{"kernelBucket.a.secretKey": secret})
	if s.bad.Kernels == nil || !strings.Contains(s.bad.Kernels.Error(), "set both secureJsonData.kernelBucket.a.accessKey and .secretKey") {
		t.Fatalf("half the credentials: %v", s.bad.Kernels)
	}
	if strings.Contains(s.bad.Kernels.Error(), secret) {
		t.Fatalf("the error names the secret: %v", s.bad.Kernels)
	}
}
