# AWS SDK for Ruby v3 (aws-sdk-s3, Debian's ruby-aws-sdk-s3) against a hoard S3 endpoint, with
# the SDK's default settings (Content-MD5 on PutObject and UploadPart, Expect: 100-continue on
# bodies of 1 MiB or more, 307s followed, the transfer helpers' threads) plus path-style
# addressing and no retries. Driven by test_ruby_sdk.py, which asserts on what this prints.
#   ruby ruby_sdk_checks.rb   (env: HOARD_ENDPOINT, HOARD_ACCESS_KEY, HOARD_SECRET_KEY,
#                              HOARD_BUCKET: an existing empty bucket, HOARD_NEW_BUCKET: a name to
#                              create and delete, HOARD_TMP: a scratch folder; HOARD_COLD_KEY: a
#                              key of HOARD_BUCKET that only its upstream holds)
# Prints one JSON object: {check: {ok: bool, ...observed values, wire: [requests]}}. Every check
# runs, whatever the others did; the exit code is 0 unless the script itself broke.
require "aws-sdk-s3"
require "digest"
require "json"
require "net/http"
require "uri"

def env(key)
  ENV.fetch(key) { raise "missing env #{key}" }
end

BUCKET = env("HOARD_BUCKET")
TMP = env("HOARD_TMP")
MIB = 1024 * 1024

# Every request the SDK sent and the status it got, per check (what went over the wire).
$wire = []
$wire_mu = Mutex.new
class WireLog < Seahorse::Client::Handler
  def call(context)
    req = context.http_request
    entry = { "method" => req.http_method, "path" => req.endpoint.path,
              "port" => req.endpoint.port,
              "query" => URI.decode_www_form(req.endpoint.query || "").to_h,
              "headers" => req.headers.to_h.transform_keys(&:downcase) }
    $wire_mu.synchronize { $wire << entry }
    resp = @handler.call(context)
    entry["status"] = context.http_response.status_code
    entry["response_headers"] = context.http_response.headers.to_h.transform_keys(&:downcase)
    resp
  end
end

S3 = Aws::S3::Client.new(endpoint: env("HOARD_ENDPOINT"), region: "us-east-1",
                         force_path_style: true, retry_limit: 0,
                         access_key_id: env("HOARD_ACCESS_KEY"),
                         secret_access_key: env("HOARD_SECRET_KEY"))
# after the signer (priority 50) and inside the redirect follower (90): every request as sent
S3.handlers.add(WireLog, step: :sign, priority: 0)

# deterministic bytes (no randomness: a failure reproduces); seed picks the stream
def pattern(n, seed)
  Random.new(seed).bytes(n).b
end

# a response body's bytes (a String in binary encoding, comparable with pattern's)
def body_of(resp) = resp.body.read.b

def md5(b) = Digest::MD5.hexdigest(b)
def sha(b) = Digest::SHA256.hexdigest(b)

def err_shape(e)
  out = { "class" => e.class.name.split("::").last, "message" => e.message.to_s[0, 300] }
  if e.respond_to?(:code)
    out["code"] = e.code
    out["status"] = e.context.http_response.status_code
  end
  out
end

RESULTS = {}
def check(name)
  $wire = []
  begin
    RESULTS[name] = { "ok" => true }.merge(yield)
  rescue StandardError => e
    RESULTS[name] = { "ok" => false, "error" => err_shape(e),
                      "backtrace" => e.backtrace.first(5) }
  end
  RESULTS[name]["wire"] = $wire
end

# The error an operation that must fail raised (nil when it succeeded).
def failure
  yield
  nil
rescue StandardError => e
  err_shape(e)
end

def write_file(name, data)
  path = File.join(TMP, name)
  File.binwrite(path, data)
  path
end

# An S3-backed bucket: the first reads of an object only its upstream holds.
if ENV["HOARD_COLD_KEY"].to_s != ""
  check("cold_get") do
    key = ENV["HOARD_COLD_KEY"]
    h0 = S3.head_object(bucket: BUCKET, key: key)
    g = S3.get_object(bucket: BUCKET, key: key)
    got = g.body.read
    rg = S3.get_object(bucket: BUCKET, key: key, range: "bytes=10-19")
    h = S3.head_object(bucket: BUCKET, key: key)
    { "head_length" => h0.content_length, "length" => got.bytesize, "md5" => md5(got),
      "etag" => g.etag, "metadata" => g.metadata, "range" => rg.body.read.b.bytes,
      "content_range" => rg.content_range, "warm_head_etag" => h.etag }
  end
end

check("create_bucket") do
  name = env("HOARD_NEW_BUCKET")
  c = S3.create_bucket(bucket: name)
  S3.wait_until(:bucket_exists, bucket: name)
  d = S3.delete_bucket(bucket: name)
  gone = failure { S3.head_bucket(bucket: name) }
  { "create_status" => c.context.http_response.status_code,
    "delete_status" => d.context.http_response.status_code, "head_after_delete" => gone }
end

check("put_string") do
  body = "hello from the AWS SDK for Ruby \u00e9\u00e8"
  p = S3.put_object(bucket: BUCKET, key: "str/hello.txt", body: body,
                    content_type: "text/plain; charset=utf-8",
                    metadata: { "color" => "blue", "x-mixed" => "Case Value" })
  g = S3.get_object(bucket: BUCKET, key: "str/hello.txt")
  { "etag" => p.etag, "want_etag" => "\"#{md5(body.b)}\"", "same" => body_of(g) == body.b,
    "content_type" => g.content_type, "metadata" => g.metadata,
    "want_md5_b64" => Digest::MD5.base64digest(body.b) }
end

# A file of 3 MiB: the SDK sends Expect: 100-continue and waits for the interim answer.
BIG = pattern(3 * MIB + 17, 1)
check("put_file_expect_continue") do
  path = write_file("big.bin", BIG)
  p = File.open(path, "rb") { |f| S3.put_object(bucket: BUCKET, key: "file/big.bin", body: f) }
  g = S3.get_object(bucket: BUCKET, key: "file/big.bin")
  { "etag" => p.etag, "want_etag" => "\"#{md5(BIG)}\"", "same" => body_of(g) == BIG,
    "length" => g.content_length }
end

# The transfer helpers: upload_file in 5 MiB parts on threads, then download_file, which asks
# for part 1 (HEAD ?partNumber=1) to learn the part count and GETs every part on threads.
MPU = pattern(22 * MIB + 12_345, 2)
check("upload_download_file") do
  src = write_file("mpu.bin", MPU)
  dst = File.join(TMP, "mpu.out")
  obj = Aws::S3::Object.new(BUCKET, "mpu/big.bin", client: S3)
  ok = obj.upload_file(src, multipart_threshold: 8 * MIB)
  h = S3.head_object(bucket: BUCKET, key: "mpu/big.bin")
  obj.download_file(dst)
  { "uploaded" => ok, "etag" => h.etag, "length" => h.content_length,
    "same" => sha(File.binread(dst)) == sha(MPU) }
end

# download_file of an object not uploaded in parts: ranged GETs of chunk_size.
check("download_ranges") do
  S3.put_object(bucket: BUCKET, key: "file/ranged.bin", body: BIG)
  dst = File.join(TMP, "ranged.out")
  Aws::S3::Object.new(BUCKET, "file/ranged.bin", client: S3).download_file(
    dst, mode: "get_range", chunk_size: MIB)
  { "same" => File.binread(dst) == BIG }
end

check("checksums") do
  out = {}
  %w[CRC32 SHA1 SHA256].each do |alg|
    S3.put_object(bucket: BUCKET, key: "alg/#{alg}", body: BIG[0, 100_000],
                  checksum_algorithm: alg)
    g = S3.get_object(bucket: BUCKET, key: "alg/#{alg}", checksum_mode: "ENABLED")
    same = body_of(g) == BIG[0, 100_000]
    out[alg] = { "validated" => (g.context[:http_checksum] || {})[:validated], "same" => same,
                 "value" => g.public_send("checksum_#{alg.downcase}") }
  end
  out["wrong_md5"] = failure do
    S3.put_object(bucket: BUCKET, key: "alg/wrong", body: "abc",
                  content_md5: Digest::MD5.base64digest("abd"))
  end
  out["wrong_stored"] = failure { S3.head_object(bucket: BUCKET, key: "alg/wrong") }
  out
end

ODD_KEYS = ["odd/sp ace+plus", "odd/per%cent", "odd/\u00fcnic\u00f8de/\u6587", "odd/a=b&c?d#e",
            "odd/tilde~star*(paren)"].freeze
check("odd_keys") do
  bodies = {}
  ODD_KEYS.each do |k|
    S3.put_object(bucket: BUCKET, key: k, body: "body of #{k}")
    bodies[k] = S3.get_object(bucket: BUCKET, key: k).body.read.force_encoding("UTF-8")
  end
  S3.put_object(bucket: BUCKET, key: "odd/empty", body: "")
  e = S3.get_object(bucket: BUCKET, key: "odd/empty")
  listed = S3.list_objects_v2(bucket: BUCKET, prefix: "odd/").contents.map(&:key)
  { "bodies" => bodies, "listed" => listed, "empty_length" => e.body.read.bytesize,
    "empty_etag" => e.etag }
end

check("list") do
  %w[list/a/1 list/a/2 list/b/1 list/c list/d list/e].each do |k|
    S3.put_object(bucket: BUCKET, key: k, body: k)
  end
  d = S3.list_objects_v2(bucket: BUCKET, prefix: "list/", delimiter: "/")
  v2_pages = S3.list_objects_v2(bucket: BUCKET, prefix: "list/", max_keys: 2).each_page
               .map { |pg| pg.contents.map(&:key) }
  v1_pages = S3.list_objects(bucket: BUCKET, prefix: "list/", max_keys: 4).each_page
               .map { |pg| pg.contents.map(&:key) }
  resource = Aws::S3::Bucket.new(BUCKET, client: S3).objects(prefix: "list/b/").map(&:key)
  { "keys" => d.contents.map(&:key), "prefixes" => d.common_prefixes.map(&:prefix),
    "sizes" => d.contents.map(&:size), "key_count" => d.key_count,
    "v2_pages" => v2_pages, "v1_pages" => v1_pages, "resource" => resource }
end

check("copy") do
  c = S3.copy_object(bucket: BUCKET, key: "copy/str.txt", copy_source: "#{BUCKET}/str/hello.txt")
  g = S3.get_object(bucket: BUCKET, key: "copy/str.txt")
  r = S3.copy_object(bucket: BUCKET, key: "copy/replaced.txt",
                     copy_source: "#{BUCKET}/str/hello.txt", metadata_directive: "REPLACE",
                     metadata: { "new" => "yes" }, content_type: "application/x-new")
  h = S3.head_object(bucket: BUCKET, key: "copy/replaced.txt")
  # copy_to with multipart_copy: CreateMultipartUpload, UploadPartCopy with ranges, Complete
  src = Aws::S3::Object.new(BUCKET, "mpu/big.bin", client: S3)
  src.copy_to({ bucket: BUCKET, key: "copy/mpu.bin" }, multipart_copy: true, min_part_size: 5 * MIB)
  mc = S3.get_object(bucket: BUCKET, key: "copy/mpu.bin")
  { "etag" => c.copy_object_result.etag, "metadata" => g.metadata,
    "same" => body_of(g) == "hello from the AWS SDK for Ruby \u00e9\u00e8".b,
    "replaced_metadata" => h.metadata, "replaced_type" => h.content_type,
    "replaced_etag" => r.copy_object_result.etag,
    "want_etag" => "\"#{md5("hello from the AWS SDK for Ruby \u00e9\u00e8".b)}\"",
    "multipart_same" => sha(body_of(mc)) == sha(MPU), "multipart_etag" => mc.etag }
end

check("conditional_range") do
  etag = S3.head_object(bucket: BUCKET, key: "file/big.bin").etag
  r = S3.get_object(bucket: BUCKET, key: "file/big.bin", range: "bytes=100-1123")
  { "status" => r.context.http_response.status_code, "content_range" => r.content_range,
    "same" => body_of(r) == BIG[100, 1024],
    "if_none_match" => failure { S3.get_object(bucket: BUCKET, key: "file/big.bin", if_none_match: etag) },
    "if_match_wrong" => failure do
      S3.get_object(bucket: BUCKET, key: "file/big.bin",
                    if_match: '"0123456789abcdef0123456789abcdef"')
    end,
    "if_modified_since_future" => failure do
      S3.head_object(bucket: BUCKET, key: "file/big.bin", if_modified_since: Time.now + 3600)
    end }
end

# A plain HTTP request; a 307 is followed once, as curl -L does (the body sent again).
# Returns [status, body, statuses seen].
def http(method, url, body = nil, seen = [])
  uri = URI(url)
  res = Net::HTTP.start(uri.host, uri.port) do |h|
    req = method == :put ? Net::HTTP::Put.new(uri) : Net::HTTP::Get.new(uri)
    req.body = body if body
    h.request(req)
  end
  seen << res.code.to_i
  return http(method, res["location"], body, seen) if res.code == "307" && seen.size == 1
  [res.code.to_i, res.body.to_s, seen]
end

check("presigned") do
  signer = Aws::S3::Presigner.new(client: S3)
  put_url = signer.presigned_url(:put_object, bucket: BUCKET, key: "pre/put.bin", expires_in: 300)
  put_status, _, put_seen = http(:put, put_url, BIG[0, 5000])
  get_url = signer.presigned_url(:get_object, bucket: BUCKET, key: "pre/put.bin")
  get_status, got, get_seen = http(:get, get_url)
  bad_status, = http(:get, get_url.sub(/X-Amz-Signature=[0-9a-f]{4}/, "X-Amz-Signature=0000"))
  { "signed" => get_url.include?("X-Amz-Signature="), "put_status" => put_status,
    "get_status" => get_status, "same" => got.b == BIG[0, 5000], "bad_status" => bad_status,
    "seen" => put_seen + get_seen }
end

check("multipart_calls") do
  up = S3.create_multipart_upload(bucket: BUCKET, key: "mpc/calls.bin", content_type: "x/y",
                                  metadata: { "k" => "v" })
  p1 = S3.upload_part(bucket: BUCKET, key: "mpc/calls.bin", upload_id: up.upload_id,
                      part_number: 1, body: MPU[0, 5 * MIB])
  p2 = S3.upload_part(bucket: BUCKET, key: "mpc/calls.bin", upload_id: up.upload_id,
                      part_number: 2, body: MPU[5 * MIB, 1234])
  parts = S3.list_parts(bucket: BUCKET, key: "mpc/calls.bin", upload_id: up.upload_id)
  listed = S3.list_multipart_uploads(bucket: BUCKET, prefix: "mpc/").uploads.map(&:key)
  done = S3.complete_multipart_upload(
    bucket: BUCKET, key: "mpc/calls.bin", upload_id: up.upload_id,
    multipart_upload: { parts: [{ part_number: 1, etag: p1.etag },
                                { part_number: 2, etag: p2.etag }] })
  g = S3.get_object(bucket: BUCKET, key: "mpc/calls.bin")
  small = S3.create_multipart_upload(bucket: BUCKET, key: "mpc/small.bin")
  s1 = S3.upload_part(bucket: BUCKET, key: "mpc/small.bin", upload_id: small.upload_id,
                      part_number: 1, body: "tiny")
  s2 = S3.upload_part(bucket: BUCKET, key: "mpc/small.bin", upload_id: small.upload_id,
                      part_number: 2, body: "tiny")
  too_small = failure do
    S3.complete_multipart_upload(
      bucket: BUCKET, key: "mpc/small.bin", upload_id: small.upload_id,
      multipart_upload: { parts: [{ part_number: 1, etag: s1.etag },
                                  { part_number: 2, etag: s2.etag }] })
  end
  ab = S3.abort_multipart_upload(bucket: BUCKET, key: "mpc/small.bin", upload_id: small.upload_id)
  after = S3.list_multipart_uploads(bucket: BUCKET, prefix: "mpc/").uploads.map(&:key)
  no_upload = failure do
    S3.upload_part(bucket: BUCKET, key: "mpc/small.bin", upload_id: small.upload_id,
                   part_number: 3, body: "x")
  end
  { "parts" => parts.parts.map { |p| [p.part_number, p.size, p.etag] },
    "want_parts" => [[1, 5 * MIB, "\"#{md5(MPU[0, 5 * MIB])}\""],
                     [2, 1234, "\"#{md5(MPU[5 * MIB, 1234])}\""]],
    "uploads_before" => listed, "etag" => done.etag, "location" => done.location,
    "same" => body_of(g) == MPU[0, 5 * MIB + 1234], "content_type" => g.content_type,
    "metadata" => g.metadata, "too_small" => too_small,
    "abort_status" => ab.context.http_response.status_code, "uploads_after" => after,
    "no_upload" => no_upload }
end

check("errors") do
  missing = "#{BUCKET}-missing"
  { "get_missing_key" => failure { S3.get_object(bucket: BUCKET, key: "no/such/key") },
    "head_missing_key" => failure { S3.head_object(bucket: BUCKET, key: "no/such/key") },
    "get_missing_bucket" => failure { S3.get_object(bucket: missing, key: "k") },
    "list_missing_bucket" => failure { S3.list_objects_v2(bucket: missing) },
    "put_missing_bucket" => failure { S3.put_object(bucket: missing, key: "k", body: "x") },
    "bad_secret" => failure do
      Aws::S3::Client.new(endpoint: env("HOARD_ENDPOINT"), region: "us-east-1",
                          force_path_style: true, retry_limit: 0,
                          access_key_id: env("HOARD_ACCESS_KEY"),
                          secret_access_key: "not-the-secret")
                     .put_object(bucket: BUCKET, key: "bad/secret", body: "x")
    end,
    "bad_secret_stored" => failure { S3.head_object(bucket: BUCKET, key: "bad/secret") } }
end

check("delete") do
  d = S3.delete_object(bucket: BUCKET, key: "list/c")
  gone = failure { S3.head_object(bucket: BUCKET, key: "list/c") }
  many = S3.delete_objects(bucket: BUCKET, delete: { objects: [
    { key: "list/a/1" }, { key: "list/a/2" }, { key: "list/never-existed" }] })
  Aws::S3::Bucket.new(BUCKET, client: S3).objects(prefix: "list/").batch_delete!
  left = S3.list_objects_v2(bucket: BUCKET, prefix: "list/").contents.map(&:key)
  { "delete_status" => d.context.http_response.status_code, "head_after_delete" => gone,
    "deleted" => many.deleted.map(&:key).sort, "errors" => many.errors.map(&:key),
    "left" => left }
end

puts JSON.generate(RESULTS)
