// AWS SDK for Go v2 (Debian's golang-github-aws-aws-sdk-go-v2-dev: service/s3 1.29,
// feature/s3/manager) against a hoard S3 endpoint, with the SDK's defaults plus path-style
// addressing and no retries: every payload signed by its SHA-256 over http (no
// UNSIGNED-PAYLOAD), flexible checksums in headers when asked for, 307 and 308 followed by
// net/http (which drops Authorization on the way to another host:port), the manager's
// Uploader and Downloader on goroutines. Driven by test_go_sdk.py, which asserts on what this
// prints. Built in GOPATH mode against Debian's packages (no module download):
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o go_sdk_checks .
//	HOARD_ENDPOINT=... HOARD_ACCESS_KEY=... HOARD_SECRET_KEY=... HOARD_BUCKET=... \
//	    HOARD_NEW_BUCKET=... [HOARD_COLD_KEY=...] ./go_sdk_checks
//
// Prints one JSON object: {check: {ok: bool, ...observed values, wire: [requests]}}. Every
// check runs, whatever the others did; the exit code is 0 unless the program itself broke.
package main

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

const mib = 1024 * 1024

type obj = map[string]interface{}

func env(k string) string {
	v := os.Getenv(k)
	if v == "" {
		panic("missing env " + k)
	}
	return v
}

// Every request that went over the wire (each hop of a followed 307 too) and its status.
type wireLog struct {
	mu      sync.Mutex
	entries []obj
	tr      http.RoundTripper
}

func (w *wireLog) RoundTrip(r *http.Request) (*http.Response, error) {
	h := map[string]string{}
	for k, v := range r.Header {
		h[strings.ToLower(k)] = strings.Join(v, ",")
	}
	q := map[string]string{}
	for k, v := range r.URL.Query() {
		q[k] = strings.Join(v, ",")
	}
	e := obj{"method": r.Method, "path": r.URL.Path, "host": r.URL.Host, "query": q, "headers": h}
	w.mu.Lock()
	w.entries = append(w.entries, e)
	w.mu.Unlock()
	resp, err := w.tr.RoundTrip(r)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		e["error"] = err.Error()
		return resp, err
	}
	e["status"] = resp.StatusCode
	rh := map[string]string{}
	for k, v := range resp.Header {
		rh[strings.ToLower(k)] = strings.Join(v, ",")
	}
	e["response_headers"] = rh
	return resp, nil
}

func (w *wireLog) take() []obj {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.entries
	w.entries = nil
	if out == nil {
		out = []obj{}
	}
	return out
}

var (
	ctx    = context.Background()
	wire   = &wireLog{tr: http.DefaultTransport}
	bucket string
	client *s3.Client
	// the SDK's own client follows only 307 and 308 (aws/transport/http: limitedRedirect);
	// this one does the same, through the wire log
	httpc = &http.Client{Transport: wire, CheckRedirect: func(r *http.Request, via []*http.Request) error {
		if r.Response.StatusCode == 307 || r.Response.StatusCode == 308 {
			return nil
		}
		return http.ErrUseLastResponse
	}}
)

func newClient(secret string) *s3.Client {
	return s3.New(s3.Options{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider(env("HOARD_ACCESS_KEY"), secret, ""),
		EndpointResolver: s3.EndpointResolverFromURL(env("HOARD_ENDPOINT")),
		UsePathStyle:     true,
		HTTPClient:       httpc,
		Retryer:          aws.NopRetryer{},
	})
}

// deterministic bytes (a failure reproduces)
func pattern(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

func md5hex(b []byte) string { s := md5.Sum(b); return hex.EncodeToString(s[:]) }
func shahex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func errShape(err error) obj {
	out := obj{"message": err.Error()}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		out["code"] = ae.ErrorCode()
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		out["status"] = re.HTTPStatusCode()
	}
	return out
}

var results = obj{}

func check(name string, fn func() (obj, error)) {
	wire.take()
	var r obj
	func() {
		defer func() {
			if p := recover(); p != nil {
				r = obj{"ok": false, "error": obj{"message": fmt.Sprint("panic: ", p)}}
			}
		}()
		out, err := fn()
		if err != nil {
			r = obj{"ok": false, "error": errShape(err)}
			return
		}
		out["ok"] = true
		r = out
	}()
	r["wire"] = wire.take()
	results[name] = r
}

// the error an operation that must fail returned (nil when it succeeded)
func failure(err error) interface{} {
	if err == nil {
		return nil
	}
	return errShape(err)
}

func readBody(out *s3.GetObjectOutput, err error) ([]byte, *s3.GetObjectOutput, error) {
	if err != nil {
		return nil, nil, err
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	return b, out, err
}

func get(key string, fns ...func(*s3.GetObjectInput)) ([]byte, *s3.GetObjectOutput, error) {
	in := &s3.GetObjectInput{Bucket: &bucket, Key: aws.String(key)}
	for _, f := range fns {
		f(in)
	}
	return readBody(client.GetObject(ctx, in))
}

func put(key string, body []byte, fns ...func(*s3.PutObjectInput)) (*s3.PutObjectOutput, error) {
	in := &s3.PutObjectInput{Bucket: &bucket, Key: aws.String(key), Body: bytes.NewReader(body)}
	for _, f := range fns {
		f(in)
	}
	return client.PutObject(ctx, in)
}

var (
	big = pattern(3*mib+17, 1)
	mpu = pattern(22*mib+12345, 2)
)

func main() {
	bucket = env("HOARD_BUCKET")
	client = newClient(env("HOARD_SECRET_KEY"))

	if key := os.Getenv("HOARD_COLD_KEY"); key != "" {
		check("cold_get", func() (obj, error) {
			h0, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key})
			if err != nil {
				return nil, err
			}
			got, g, err := get(key)
			if err != nil {
				return nil, err
			}
			part, rg, err := get(key, func(in *s3.GetObjectInput) { in.Range = aws.String("bytes=10-19") })
			if err != nil {
				return nil, err
			}
			return obj{"head_length": h0.ContentLength, "length": len(got), "md5": md5hex(got),
				"etag": aws.ToString(g.ETag), "metadata": g.Metadata, "range": hex.EncodeToString(part),
				"content_range": aws.ToString(rg.ContentRange)}, nil
		})
	}

	check("create_bucket", func() (obj, error) {
		name := env("HOARD_NEW_BUCKET")
		if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &name}); err != nil {
			return nil, err
		}
		if _, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &name}); err != nil {
			return nil, err
		}
		if _, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &name}); err != nil {
			return nil, err
		}
		_, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &name})
		return obj{"head_after_delete": failure(err)}, nil
	})

	body := []byte("hello from the AWS SDK for Go v2 \u00e9\u00e8")
	check("put_string", func() (obj, error) {
		p, err := put("str/hello.txt", body, func(in *s3.PutObjectInput) {
			in.ContentType = aws.String("text/plain; charset=utf-8")
			in.Metadata = map[string]string{"color": "blue", "x-mixed": "Case Value"}
		})
		if err != nil {
			return nil, err
		}
		got, g, err := get("str/hello.txt")
		if err != nil {
			return nil, err
		}
		return obj{"etag": aws.ToString(p.ETag), "want_etag": `"` + md5hex(body) + `"`,
			"same": bytes.Equal(got, body), "content_type": aws.ToString(g.ContentType),
			"metadata": g.Metadata, "want_sha256": shahex(body)}, nil
	})

	check("put_big", func() (obj, error) {
		p, err := put("file/big.bin", big)
		if err != nil {
			return nil, err
		}
		got, _, err := get("file/big.bin")
		if err != nil {
			return nil, err
		}
		return obj{"etag": aws.ToString(p.ETag), "want_etag": `"` + md5hex(big) + `"`,
			"same": bytes.Equal(got, big)}, nil
	})

	check("uploader_downloader", func() (obj, error) {
		up := manager.NewUploader(client, func(u *manager.Uploader) { u.PartSize = 5 * mib })
		res, err := up.Upload(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("mpu/big.bin"),
			Body: bytes.NewReader(mpu)})
		if err != nil {
			return nil, err
		}
		buf := manager.NewWriteAtBuffer(make([]byte, 0, len(mpu)))
		down := manager.NewDownloader(client, func(d *manager.Downloader) { d.PartSize = 5 * mib })
		n, err := down.Download(ctx, buf, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("mpu/big.bin")})
		if err != nil {
			return nil, err
		}
		return obj{"etag": aws.ToString(res.ETag), "parts": len(res.CompletedParts), "downloaded": n,
			"same": bytes.Equal(buf.Bytes(), mpu)}, nil
	})

	check("checksums", func() (obj, error) {
		out := obj{}
		data := big[:100000]
		for _, alg := range []types.ChecksumAlgorithm{types.ChecksumAlgorithmCrc32,
			types.ChecksumAlgorithmCrc32c, types.ChecksumAlgorithmSha1, types.ChecksumAlgorithmSha256} {
			key := "alg/" + string(alg)
			if _, err := put(key, data, func(in *s3.PutObjectInput) { in.ChecksumAlgorithm = alg }); err != nil {
				return nil, err
			}
			got, g, err := get(key, func(in *s3.GetObjectInput) { in.ChecksumMode = types.ChecksumModeEnabled })
			if err != nil {
				return nil, err
			}
			val := map[types.ChecksumAlgorithm]*string{types.ChecksumAlgorithmCrc32: g.ChecksumCRC32,
				types.ChecksumAlgorithmCrc32c: g.ChecksumCRC32C, types.ChecksumAlgorithmSha1: g.ChecksumSHA1,
				types.ChecksumAlgorithmSha256: g.ChecksumSHA256}[alg]
			out[string(alg)] = obj{"same": bytes.Equal(got, data), "value": aws.ToString(val)}
		}
		sum := md5.Sum([]byte("abd"))
		_, err := put("alg/wrong", []byte("abc"), func(in *s3.PutObjectInput) {
			in.ContentMD5 = aws.String(base64.StdEncoding.EncodeToString(sum[:]))
		})
		out["wrong_md5"] = failure(err)
		_, err = client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("alg/wrong")})
		out["wrong_stored"] = failure(err)
		return out, nil
	})

	oddKeys := []string{"odd/sp ace+plus", "odd/per%cent", "odd/\u00fcnic\u00f8de/\u6587", "odd/a=b&c?d#e",
		"odd/tilde~star*(paren)"}
	check("odd_keys", func() (obj, error) {
		bodies := obj{}
		for _, k := range oddKeys {
			if _, err := put(k, []byte("body of "+k)); err != nil {
				return nil, err
			}
			got, _, err := get(k)
			if err != nil {
				return nil, err
			}
			bodies[k] = string(got)
		}
		if _, err := put("odd/empty", nil); err != nil {
			return nil, err
		}
		got, e, err := get("odd/empty")
		if err != nil {
			return nil, err
		}
		l, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: aws.String("odd/")})
		if err != nil {
			return nil, err
		}
		listed := []string{}
		for _, o := range l.Contents {
			listed = append(listed, aws.ToString(o.Key))
		}
		return obj{"bodies": bodies, "listed": listed, "empty_length": len(got),
			"empty_etag": aws.ToString(e.ETag)}, nil
	})

	check("list", func() (obj, error) {
		for _, k := range []string{"list/a/1", "list/a/2", "list/b/1", "list/c", "list/d", "list/e"} {
			if _, err := put(k, []byte(k)); err != nil {
				return nil, err
			}
		}
		d, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &bucket,
			Prefix: aws.String("list/"), Delimiter: aws.String("/")})
		if err != nil {
			return nil, err
		}
		keys, prefixes, sizes := []string{}, []string{}, []int64{}
		for _, o := range d.Contents {
			keys = append(keys, aws.ToString(o.Key))
			sizes = append(sizes, o.Size)
		}
		for _, p := range d.CommonPrefixes {
			prefixes = append(prefixes, aws.ToString(p.Prefix))
		}
		pages := [][]string{}
		pg := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: &bucket,
			Prefix: aws.String("list/"), MaxKeys: 2})
		for pg.HasMorePages() {
			page, err := pg.NextPage(ctx)
			if err != nil {
				return nil, err
			}
			ks := []string{}
			for _, o := range page.Contents {
				ks = append(ks, aws.ToString(o.Key))
			}
			pages = append(pages, ks)
		}
		// ListObjects (V1) has no paginator here: NextMarker, else the last key, as S3's docs say
		v1 := [][]string{}
		var marker *string
		for {
			page, err := client.ListObjects(ctx, &s3.ListObjectsInput{Bucket: &bucket,
				Prefix: aws.String("list/"), MaxKeys: 4, Marker: marker})
			if err != nil {
				return nil, err
			}
			ks := []string{}
			for _, o := range page.Contents {
				ks = append(ks, aws.ToString(o.Key))
			}
			v1 = append(v1, ks)
			if !page.IsTruncated || len(ks) == 0 {
				break
			}
			marker = page.NextMarker
			if marker == nil {
				marker = aws.String(ks[len(ks)-1])
			}
		}
		return obj{"keys": keys, "prefixes": prefixes, "sizes": sizes, "key_count": d.KeyCount,
			"v2_pages": pages, "v1_pages": v1}, nil
	})

	check("copy", func() (obj, error) {
		c, err := client.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &bucket, Key: aws.String("copy/str.txt"),
			CopySource: aws.String(bucket + "/str/hello.txt")})
		if err != nil {
			return nil, err
		}
		got, g, err := get("copy/str.txt")
		if err != nil {
			return nil, err
		}
		if _, err := client.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &bucket, Key: aws.String("copy/replaced.txt"),
			CopySource: aws.String(bucket + "/str/hello.txt"), MetadataDirective: types.MetadataDirectiveReplace,
			Metadata: map[string]string{"new": "yes"}, ContentType: aws.String("application/x-new")}); err != nil {
			return nil, err
		}
		h, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("copy/replaced.txt")})
		if err != nil {
			return nil, err
		}
		// a multipart copy by hand: UploadPartCopy of 5 MiB ranges of the uploaded object
		cr, err := client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket,
			Key: aws.String("copy/mpu.bin")})
		if err != nil {
			return nil, err
		}
		parts := []types.CompletedPart{}
		for i, off := int32(1), 0; off < len(mpu); i, off = i+1, off+5*mib {
			end := off + 5*mib - 1
			if end >= len(mpu) {
				end = len(mpu) - 1
			}
			pc, err := client.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: &bucket,
				Key: aws.String("copy/mpu.bin"), UploadId: cr.UploadId, PartNumber: i,
				CopySource: aws.String(bucket + "/mpu/big.bin"), CopySourceRange: aws.String(fmt.Sprintf("bytes=%d-%d", off, end))})
			if err != nil {
				return nil, err
			}
			parts = append(parts, types.CompletedPart{PartNumber: i, ETag: pc.CopyPartResult.ETag})
		}
		if _, err := client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &bucket,
			Key: aws.String("copy/mpu.bin"), UploadId: cr.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
			return nil, err
		}
		mc, _, err := get("copy/mpu.bin")
		if err != nil {
			return nil, err
		}
		return obj{"etag": aws.ToString(c.CopyObjectResult.ETag), "want_etag": `"` + md5hex(body) + `"`,
			"same": bytes.Equal(got, body), "metadata": g.Metadata, "replaced_metadata": h.Metadata,
			"replaced_type": aws.ToString(h.ContentType), "multipart_parts": len(parts),
			"multipart_same": bytes.Equal(mc, mpu)}, nil
	})

	check("conditional_range", func() (obj, error) {
		h, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("file/big.bin")})
		if err != nil {
			return nil, err
		}
		got, r, err := get("file/big.bin", func(in *s3.GetObjectInput) { in.Range = aws.String("bytes=100-1123") })
		if err != nil {
			return nil, err
		}
		_, _, inm := get("file/big.bin", func(in *s3.GetObjectInput) { in.IfNoneMatch = h.ETag })
		_, _, imw := get("file/big.bin", func(in *s3.GetObjectInput) {
			in.IfMatch = aws.String(`"0123456789abcdef0123456789abcdef"`)
		})
		future := time.Now().Add(time.Hour)
		_, ims := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("file/big.bin"),
			IfModifiedSince: &future})
		return obj{"content_range": aws.ToString(r.ContentRange), "same": bytes.Equal(got, big[100:1124]),
			"if_none_match": failure(inm), "if_match_wrong": failure(imw),
			"if_modified_since_future": failure(ims)}, nil
	})

	check("presigned", func() (obj, error) {
		pc := s3.NewPresignClient(client)
		pp, err := pc.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("pre/put.bin")})
		if err != nil {
			return nil, err
		}
		do := func(method, url string, b []byte) (int, []byte, error) {
			req, err := http.NewRequest(method, url, bytes.NewReader(b))
			if err != nil {
				return 0, nil, err
			}
			resp, err := httpc.Do(req)
			if err != nil {
				return 0, nil, err
			}
			defer resp.Body.Close()
			data, err := io.ReadAll(resp.Body)
			return resp.StatusCode, data, err
		}
		ps, _, err := do(pp.Method, pp.URL, big[:5000])
		if err != nil {
			return nil, err
		}
		pg, err := pc.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("pre/put.bin")})
		if err != nil {
			return nil, err
		}
		gs, got, err := do("GET", pg.URL, nil)
		if err != nil {
			return nil, err
		}
		i := strings.Index(pg.URL, "X-Amz-Signature=") + len("X-Amz-Signature=")
		bs, _, err := do("GET", pg.URL[:i]+"0000"+pg.URL[i+4:], nil)
		if err != nil {
			return nil, err
		}
		return obj{"put_status": ps, "get_status": gs, "same": bytes.Equal(got, big[:5000]), "bad_status": bs}, nil
	})

	check("multipart_calls", func() (obj, error) {
		key := aws.String("mpc/calls.bin")
		up, err := client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: key,
			ContentType: aws.String("x/y"), Metadata: map[string]string{"k": "v"}})
		if err != nil {
			return nil, err
		}
		var etags []*string
		for i, b := range [][]byte{mpu[:5*mib], mpu[5*mib : 5*mib+1234]} {
			p, err := client.UploadPart(ctx, &s3.UploadPartInput{Bucket: &bucket, Key: key, UploadId: up.UploadId,
				PartNumber: int32(i + 1), Body: bytes.NewReader(b)})
			if err != nil {
				return nil, err
			}
			etags = append(etags, p.ETag)
		}
		lp, err := client.ListParts(ctx, &s3.ListPartsInput{Bucket: &bucket, Key: key, UploadId: up.UploadId})
		if err != nil {
			return nil, err
		}
		parts := [][]interface{}{}
		for _, p := range lp.Parts {
			parts = append(parts, []interface{}{p.PartNumber, p.Size, aws.ToString(p.ETag)})
		}
		lu, err := client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &bucket, Prefix: aws.String("mpc/")})
		if err != nil {
			return nil, err
		}
		before := []string{}
		for _, u := range lu.Uploads {
			before = append(before, aws.ToString(u.Key))
		}
		done, err := client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &bucket, Key: key,
			UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{
				{PartNumber: 1, ETag: etags[0]}, {PartNumber: 2, ETag: etags[1]}}}})
		if err != nil {
			return nil, err
		}
		got, g, err := get("mpc/calls.bin")
		if err != nil {
			return nil, err
		}
		skey := aws.String("mpc/small.bin")
		small, err := client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: skey})
		if err != nil {
			return nil, err
		}
		var sparts []types.CompletedPart
		for i := int32(1); i <= 2; i++ {
			p, err := client.UploadPart(ctx, &s3.UploadPartInput{Bucket: &bucket, Key: skey, UploadId: small.UploadId,
				PartNumber: i, Body: bytes.NewReader([]byte("tiny"))})
			if err != nil {
				return nil, err
			}
			sparts = append(sparts, types.CompletedPart{PartNumber: i, ETag: p.ETag})
		}
		_, tooSmall := client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &bucket, Key: skey,
			UploadId: small.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: sparts}})
		if _, err := client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &bucket, Key: skey,
			UploadId: small.UploadId}); err != nil {
			return nil, err
		}
		la, err := client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &bucket, Prefix: aws.String("mpc/")})
		if err != nil {
			return nil, err
		}
		_, noUpload := client.UploadPart(ctx, &s3.UploadPartInput{Bucket: &bucket, Key: skey, UploadId: small.UploadId,
			PartNumber: 3, Body: bytes.NewReader([]byte("x"))})
		return obj{"parts": parts, "want_parts": [][]interface{}{{1, 5 * mib, `"` + md5hex(mpu[:5*mib]) + `"`},
			{2, 1234, `"` + md5hex(mpu[5*mib:5*mib+1234]) + `"`}},
			"uploads_before": before, "etag": aws.ToString(done.ETag), "same": bytes.Equal(got, mpu[:5*mib+1234]),
			"content_type": aws.ToString(g.ContentType), "metadata": g.Metadata, "too_small": failure(tooSmall),
			"uploads_after": len(la.Uploads), "no_upload": failure(noUpload)}, nil
	})

	check("errors", func() (obj, error) {
		missing := bucket + "-missing"
		_, _, e1 := get("no/such/key")
		_, e2 := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("no/such/key")})
		_, e3 := client.GetObject(ctx, &s3.GetObjectInput{Bucket: &missing, Key: aws.String("k")})
		_, e4 := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &missing})
		_, e5 := client.PutObject(ctx, &s3.PutObjectInput{Bucket: &missing, Key: aws.String("k"),
			Body: bytes.NewReader([]byte("x"))})
		_, e6 := newClient("not-the-secret").PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket,
			Key: aws.String("bad/secret"), Body: bytes.NewReader([]byte("x"))})
		_, e7 := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("bad/secret")})
		var nsk *types.NoSuchKey
		return obj{"get_missing_key": failure(e1), "typed_no_such_key": errors.As(e1, &nsk),
			"head_missing_key": failure(e2), "get_missing_bucket": failure(e3),
			"list_missing_bucket": failure(e4), "put_missing_bucket": failure(e5),
			"bad_secret": failure(e6), "bad_secret_stored": failure(e7)}, nil
	})

	check("delete", func() (obj, error) {
		if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: aws.String("list/c")}); err != nil {
			return nil, err
		}
		_, gone := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("list/c")})
		objs := []types.ObjectIdentifier{}
		for _, k := range []string{"list/a/1", "list/a/2", "list/never-existed"} {
			objs = append(objs, types.ObjectIdentifier{Key: aws.String(k)})
		}
		many, err := client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &bucket,
			Delete: &types.Delete{Objects: objs}})
		if err != nil {
			return nil, err
		}
		deleted := []string{}
		for _, d := range many.Deleted {
			deleted = append(deleted, aws.ToString(d.Key))
		}
		sort.Strings(deleted)
		return obj{"head_after_delete": failure(gone), "deleted": deleted, "errors": len(many.Errors)}, nil
	})

	out, err := json.Marshal(results)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(out))
}
