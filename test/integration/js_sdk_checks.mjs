// AWS SDK for JavaScript v3 against a hoard S3 endpoint, with the SDK's default settings
// (flexible checksums: CRC32 on uploads, response checksum validation on downloads) plus
// forcePathStyle. Driven by test_js_sdk.py, which asserts on what this prints.
//   node js_sdk_checks.mjs   (env: HOARD_ENDPOINT, HOARD_ACCESS_KEY, HOARD_SECRET_KEY,
//                              HOARD_BUCKET: an existing empty bucket, HOARD_NEW_BUCKET: a name
//                              to create and delete; HOARD_SKIP: checks not to run, comma-
//                              separated; HOARD_COLD_KEY: a key of HOARD_BUCKET that only its
//                              upstream holds, for the cold_get check)
// Prints one JSON object: {check: {ok: bool, ...observed values} | {ok: false, error: {...}}}.
// Every check runs, whatever the others did; the exit code is 0 unless the script itself broke.
import { createHash } from "node:crypto";
// not node:zlib's crc32 (node >= 20.15; Debian 12's node is 18): the SDK's own CRC32 package
import awsCrc32 from "@aws-crypto/crc32";
import { Readable } from "node:stream";
import {
    S3Client, CreateBucketCommand, DeleteBucketCommand, HeadBucketCommand, PutObjectCommand,
    GetObjectCommand, HeadObjectCommand, CopyObjectCommand, DeleteObjectCommand,
    DeleteObjectsCommand, ListObjectsV2Command, paginateListObjectsV2, ListBucketsCommand,
    GetObjectAttributesCommand, CreateMultipartUploadCommand, UploadPartCommand, ListPartsCommand,
    CompleteMultipartUploadCommand, AbortMultipartUploadCommand, ListMultipartUploadsCommand,
} from "@aws-sdk/client-s3";
const { crc32 } = awsCrc32;
import { Upload } from "@aws-sdk/lib-storage";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";

const env = (k) => {
    if (!process.env[k]) throw new Error("missing env " + k);
    return process.env[k];
};
const endpoint = env("HOARD_ENDPOINT");
const bucket = env("HOARD_BUCKET");
const newBucket = env("HOARD_NEW_BUCKET");

// Every request and response header the SDK exchanged, per check (the wire view of checksums).
let wire = [];
const s3 = new S3Client({
    endpoint, region: "us-east-1", forcePathStyle: true, maxAttempts: 1,
    credentials: { accessKeyId: env("HOARD_ACCESS_KEY"), secretAccessKey: env("HOARD_SECRET_KEY") },
});
s3.middlewareStack.add((next) => async (args) => {
    const req = args.request;
    const entry = { method: req.method, path: req.path, query: { ...req.query },
        headers: { ...req.headers } };
    wire.push(entry);
    const out = await next(args);
    entry.status = out.response.statusCode;
    entry.response_headers = { ...out.response.headers };
    return out;
}, { step: "finalizeRequest", name: "hoardWire", priority: "low" });

// deterministic bytes (no randomness: a failure reproduces)
function pattern(n, seed) {
    const b = Buffer.alloc(n);
    let x = (seed * 2654435761) >>> 0 || 1;
    for (let i = 0; i < n; i++) {
        x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
        b[i] = x & 0xff;
    }
    return b;
}
const md5 = (b) => createHash("md5").update(b).digest("hex");
const sha = (b) => createHash("sha256").update(b).digest("hex");
const bodyBytes = async (r) => Buffer.from(await r.Body.transformToByteArray());

function errShape(e) {
    return { name: e.name, code: e.Code, message: String(e.message).slice(0, 300),
        status: e.$metadata ? e.$metadata.httpStatusCode : undefined,
        fault: e.$fault };
}

const results = {};
const skip = new Set((process.env.HOARD_SKIP || "").split(",").filter(Boolean));
async function check(name, fn) {
    if (skip.has(name)) return;
    wire = [];
    try {
        results[name] = { ok: true, ...(await fn()) };
    } catch (e) {
        results[name] = { ok: false, error: errShape(e) };
    }
    results[name].wire = wire;
}
// The error an operation that must fail raised (null when it succeeded).
async function failure(fn) {
    try {
        await fn();
        return null;
    } catch (e) {
        return errShape(e);
    }
}

// An S3-backed bucket: the first reads of an object only its upstream holds (cold GET, then a
// Range and a HEAD of the now cached object), with checksum mode on as always.
if (process.env.HOARD_COLD_KEY) {
    await check("cold_get", async () => {
        const key = process.env.HOARD_COLD_KEY;
        const h0 = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
        const g = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        const got = await bodyBytes(g);
        const rg = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key,
            Range: "bytes=10-19" }));
        const part = await bodyBytes(rg);
        const h = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
        return { head_length: h0.ContentLength, head_etag: h0.ETag, length: got.length,
            md5: md5(got), etag: g.ETag, metadata: g.Metadata, range: part.toString("latin1"),
            content_range: rg.ContentRange, warm_head_etag: h.ETag };
    });
}

await check("create_bucket", async () => {
    const c = await s3.send(new CreateBucketCommand({ Bucket: newBucket }));
    const h = await s3.send(new HeadBucketCommand({ Bucket: newBucket }));
    const d = await s3.send(new DeleteBucketCommand({ Bucket: newBucket }));
    const gone = await failure(() => s3.send(new HeadBucketCommand({ Bucket: newBucket })));
    return { create_status: c.$metadata.httpStatusCode, head_status: h.$metadata.httpStatusCode,
        delete_status: d.$metadata.httpStatusCode, head_after_delete: gone };
});

await check("put_string", async () => {
    const body = "hello from the AWS SDK for JavaScript v3 \u00e9\u00e8";
    const p = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "str/hello.txt",
        Body: body, ContentType: "text/plain; charset=utf-8" }));
    const g = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "str/hello.txt" }));
    const got = await bodyBytes(g);
    return { etag: p.ETag, want_etag: '"' + md5(Buffer.from(body)) + '"',
        put_checksum_crc32: p.ChecksumCRC32, same: got.equals(Buffer.from(body)),
        content_type: g.ContentType, get_checksum_crc32: g.ChecksumCRC32 };
});

const buf = pattern(300 * 1024 + 7, 1);
await check("put_buffer", async () => {
    const p = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "buf/one.bin", Body: buf,
        Metadata: { color: "blue", "x-mixed": "Case Value" } }));
    const g = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "buf/one.bin" }));
    const got = await bodyBytes(g);
    const h = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: "buf/one.bin" }));
    return { etag: p.ETag, want_etag: '"' + md5(buf) + '"', same: got.equals(buf),
        get_length: g.ContentLength, head_length: h.ContentLength, head_etag: h.ETag,
        metadata: h.Metadata, get_metadata: g.Metadata,
        last_modified_is_date: h.LastModified instanceof Date };
});

// A stream of unknown length (no ContentLength): the SDK sends it aws-chunked with a CRC32
// trailer when it can.
const streamData = pattern(200 * 1024 + 3, 2);
await check("put_stream_unknown_length", async () => {
    const chunks = [];
    for (let i = 0; i < streamData.length; i += 64 * 1024) {
        chunks.push(streamData.subarray(i, i + 64 * 1024));
    }
    const p = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "stream/unknown.bin",
        Body: Readable.from(chunks) }));
    const g = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "stream/unknown.bin" }));
    const got = await bodyBytes(g);
    return { etag: p.ETag, want_etag: '"' + md5(streamData) + '"', same: got.equals(streamData),
        length: got.length };
});

// With ContentLength the SDK streams it, aws-chunked with a CRC32 trailer.
await check("put_stream_known_length", async () => {
    const p = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "stream/known.bin",
        Body: Readable.from([streamData.subarray(0, 100000), streamData.subarray(100000)]),
        ContentLength: streamData.length }));
    const g = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "stream/known.bin" }));
    const got = await bodyBytes(g);
    return { etag: p.ETag, want_etag: '"' + md5(streamData) + '"', same: got.equals(streamData),
        put_checksum_crc32: p.ChecksumCRC32, get_checksum_crc32: g.ChecksumCRC32 };
});

// lib-storage's Upload takes what PutObject refuses: a stream of unknown length (below
// partSize: one PutObject).
await check("upload_stream_small", async () => {
    const up = new Upload({ client: s3, params: { Bucket: bucket, Key: "stream/upload.bin",
        Body: Readable.from([streamData]) }, partSize: 5 * 1024 * 1024 });
    const r = await up.done();
    const g = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "stream/upload.bin" }));
    const got = await bodyBytes(g);
    return { etag: r.ETag, want_etag: '"' + md5(streamData) + '"', same: got.equals(streamData) };
});

// Other algorithms the SDK computes itself, and a checksum that does not match the body.
await check("put_checksum_algorithms", async () => {
    const out = {};
    for (const alg of ["CRC32C", "SHA1", "SHA256"]) {
        const p = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "alg/" + alg,
            Body: buf, ChecksumAlgorithm: alg }));
        const g = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "alg/" + alg }));
        out[alg] = { put: p["Checksum" + alg], get: g["Checksum" + alg],
            same: (await bodyBytes(g)).equals(buf) };
    }
    out.wrong_crc32 = await failure(() => s3.send(new PutObjectCommand({ Bucket: bucket,
        Key: "alg/wrong", Body: buf, ChecksumCRC32: "AAAAAA==" })));
    out.wrong_stored = await failure(() => s3.send(new HeadObjectCommand({ Bucket: bucket,
        Key: "alg/wrong" })));
    return out;
});

// Keys the SDK has to encode in the path (its own encoder, not botocore's), an empty body.
const oddKeys = ["odd/sp ace+plus", "odd/per%cent", "odd/\u00fcnic\u00f8de/\u6587", "odd/a=b&c?d#e",
    "odd/tilde~star*(paren)", "odd//double"];
await check("odd_keys", async () => {
    const got = {};
    for (const k of oddKeys) { // each key's body, or the error of its PUT or GET
        try {
            await s3.send(new PutObjectCommand({ Bucket: bucket, Key: k, Body: "body of " + k }));
            const g = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: k }));
            got[k] = (await bodyBytes(g)).toString("utf8");
        } catch (e) {
            got[k] = errShape(e);
        }
    }
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "odd/empty", Body: "" }));
    const e = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "odd/empty" }));
    const l = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: "odd/" }));
    return { bodies: got, empty_length: (await bodyBytes(e)).length, empty_etag: e.ETag,
        empty_crc32: e.ChecksumCRC32, listed: (l.Contents || []).map((o) => o.Key) };
});

// Conditional writes (If-None-Match: * / If-Match on PutObject), ListBuckets, a missing bucket's
// HEAD, GetObjectAttributes.
await check("misc", async () => {
    const first = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "misc/once",
        Body: "first", IfNoneMatch: "*" }));
    const second = await failure(() => s3.send(new PutObjectCommand({ Bucket: bucket,
        Key: "misc/once", Body: "second", IfNoneMatch: "*" })));
    const wrongMatch = await failure(() => s3.send(new PutObjectCommand({ Bucket: bucket,
        Key: "misc/once", Body: "third", IfMatch: '"0123456789abcdef0123456789abcdef"' })));
    const rightMatch = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "misc/once",
        Body: "fourth", IfMatch: first.ETag }));
    const now = await bodyBytes(await s3.send(new GetObjectCommand({ Bucket: bucket,
        Key: "misc/once" })));
    const lb = await s3.send(new ListBucketsCommand({}));
    const headMissing = await failure(() => s3.send(new HeadBucketCommand({
        Bucket: newBucket + "-never" })));
    let attrs;
    try {
        const a = await s3.send(new GetObjectAttributesCommand({ Bucket: bucket, Key: "buf/one.bin",
            ObjectAttributes: ["ETag", "Checksum", "ObjectSize", "StorageClass"] }));
        attrs = { etag: a.ETag, size: a.ObjectSize, checksum: a.Checksum,
            storage_class: a.StorageClass };
    } catch (e) {
        attrs = { error: errShape(e) };
    }
    return { if_none_match_first_etag: first.ETag, if_none_match_second: second,
        if_match_wrong: wrongMatch, if_match_right_etag: rightMatch.ETag,
        body_now: now.toString(), buckets_listed: (lb.Buckets || []).some((b) => b.Name === bucket),
        head_missing_bucket: headMissing, attributes: attrs };
});

await check("list_v2", async () => {
    for (const k of ["list/a/1", "list/a/2", "list/b/1", "list/c", "list/d", "list/e"]) {
        await s3.send(new PutObjectCommand({ Bucket: bucket, Key: k, Body: k }));
    }
    const l = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: "list/",
        Delimiter: "/" }));
    const pages = [];
    for await (const page of paginateListObjectsV2({ client: s3, pageSize: 2 },
        { Bucket: bucket, Prefix: "list/" })) {
        pages.push((page.Contents || []).map((o) => o.Key));
    }
    return { keys: (l.Contents || []).map((o) => o.Key),
        prefixes: (l.CommonPrefixes || []).map((p) => p.Prefix), key_count: l.KeyCount,
        truncated: l.IsTruncated, sizes: (l.Contents || []).map((o) => o.Size), pages };
});

await check("copy_object", async () => {
    const c = await s3.send(new CopyObjectCommand({ Bucket: bucket, Key: "copy/of-one.bin",
        CopySource: `${bucket}/buf/one.bin` }));
    const g = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "copy/of-one.bin" }));
    const got = await bodyBytes(g);
    return { etag: c.CopyObjectResult && c.CopyObjectResult.ETag, want_etag: '"' + md5(buf) + '"',
        same: got.equals(buf), metadata: g.Metadata };
});

await check("range_get", async () => {
    const g = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "buf/one.bin",
        Range: "bytes=100-1123" }));
    const got = await bodyBytes(g);
    return { status: g.$metadata.httpStatusCode, content_range: g.ContentRange,
        length: g.ContentLength, same: got.equals(buf.subarray(100, 1124)) };
});

await check("conditional_get", async () => {
    const h = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: "buf/one.bin" }));
    const notModified = await failure(() => s3.send(new GetObjectCommand({ Bucket: bucket,
        Key: "buf/one.bin", IfNoneMatch: h.ETag })));
    const failed = await failure(() => s3.send(new GetObjectCommand({ Bucket: bucket,
        Key: "buf/one.bin", IfMatch: '"0123456789abcdef0123456789abcdef"' })));
    const g = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "buf/one.bin",
        IfMatch: h.ETag }));
    const got = await bodyBytes(g);
    return { if_none_match: notModified, if_match_wrong: failed,
        if_match_right_same: got.equals(buf) };
});

await check("presigned_get", async () => {
    const url = await getSignedUrl(s3, new GetObjectCommand({ Bucket: bucket, Key: "buf/one.bin" }),
        { expiresIn: 600 });
    const r = await fetch(url);
    const got = Buffer.from(await r.arrayBuffer());
    const bad = await fetch(url.replace(/X-Amz-Signature=[0-9a-f]+/,
        "X-Amz-Signature=" + "0".repeat(64)));
    return { status: r.status, same: got.equals(buf), bad_signature_status: bad.status,
        has_signature: url.includes("X-Amz-Signature=") };
});

// A presigned PUT with the SDK's defaults: it signs the CRC32 of the body it does not have
// (empty: x-amz-checksum-crc32=AAAAAA==) into the query; the uploader then PUTs real bytes.
await check("presigned_put", async () => {
    const url = await getSignedUrl(s3, new PutObjectCommand({ Bucket: bucket,
        Key: "presigned/put.bin" }), { expiresIn: 600 });
    const body = pattern(70000, 4);
    const r = await fetch(url, { method: "PUT", body });
    const g = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "presigned/put.bin" }));
    const got = await bodyBytes(g);
    return { url_query: Object.fromEntries(new URL(url).searchParams), status: r.status,
        etag: r.headers.get("etag"), want_etag: '"' + md5(body) + '"', same: got.equals(body),
        get_checksum_crc32: g.ChecksumCRC32 };
});

const big = pattern(20 * 1024 * 1024 + 12345, 3);
await check("multipart_upload", async () => {
    const up = new Upload({ client: s3, params: { Bucket: bucket, Key: "mpu/big.bin", Body: big },
        partSize: 5 * 1024 * 1024, queueSize: 2, leavePartsOnError: false });
    const r = await up.done();
    const hc = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: "mpu/big.bin",
        ChecksumMode: "ENABLED" }));
    const parts = [];
    for (let i = 0; i < big.length; i += 5 * 1024 * 1024) {
        parts.push(createHash("md5").update(big.subarray(i, i + 5 * 1024 * 1024)).digest());
    }
    const want = '"' + md5(Buffer.concat(parts)) + "-" + parts.length + '"';
    const g = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "mpu/big.bin" }));
    const got = await bodyBytes(g);
    const h = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: "mpu/big.bin" }));
    return { etag: r.ETag, want_etag: want, md5: md5(big), head_etag: h.ETag,
        head_length: h.ContentLength,
        want_length: big.length, same_sha256: sha(got) === sha(big),
        parts: wire.filter((w) => w.query.partNumber).length,
        complete_checksum_crc32: r.ChecksumCRC32, head_checksum_crc32: hc.ChecksumCRC32,
        head_checksum_type: hc.ChecksumType };
});

// The multipart calls one by one: a FULL_OBJECT CRC32 upload completed with the whole body's
// CRC32, and an aborted upload (ListParts, ListMultipartUploads before and after).
const b64crc = (b) => {
    const x = Buffer.alloc(4);
    x.writeUInt32BE(crc32(b) >>> 0);
    return x.toString("base64");
};
await check("multipart_calls", async () => {
    const parts = [pattern(5 * 1024 * 1024, 5), pattern(1234, 6)];
    const whole = Buffer.concat(parts);
    const c = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: "mpc/full",
        ChecksumAlgorithm: "CRC32", ChecksumType: "FULL_OBJECT" }));
    const done = [];
    for (let i = 0; i < parts.length; i++) {
        const u = await s3.send(new UploadPartCommand({ Bucket: bucket, Key: "mpc/full",
            UploadId: c.UploadId, PartNumber: i + 1, Body: parts[i] }));
        done.push({ PartNumber: i + 1, ETag: u.ETag, ChecksumCRC32: u.ChecksumCRC32 });
    }
    const lp = await s3.send(new ListPartsCommand({ Bucket: bucket, Key: "mpc/full",
        UploadId: c.UploadId }));
    const comp = await s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket,
        Key: "mpc/full", UploadId: c.UploadId, ChecksumCRC32: b64crc(whole),
        ChecksumType: "FULL_OBJECT", MultipartUpload: { Parts: done } }));
    const g = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "mpc/full" }));
    const got = await bodyBytes(g);
    // a whole-object CRC32 that does not match: BadDigest, nothing stored
    const w = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: "mpc/wrong",
        ChecksumAlgorithm: "CRC32", ChecksumType: "FULL_OBJECT" }));
    const wp = await s3.send(new UploadPartCommand({ Bucket: bucket, Key: "mpc/wrong",
        UploadId: w.UploadId, PartNumber: 1, Body: parts[1] }));
    const wrong = await failure(() => s3.send(new CompleteMultipartUploadCommand({
        Bucket: bucket, Key: "mpc/wrong", UploadId: w.UploadId, ChecksumCRC32: "AAAAAA==",
        ChecksumType: "FULL_OBJECT", MultipartUpload: { Parts: [{ PartNumber: 1, ETag: wp.ETag,
            ChecksumCRC32: wp.ChecksumCRC32 }] } })));
    const wrongHead = await failure(() => s3.send(new HeadObjectCommand({ Bucket: bucket,
        Key: "mpc/wrong" })));
    await s3.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: "mpc/wrong",
        UploadId: w.UploadId }));
    const a = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket,
        Key: "mpc/aborted" }));
    await s3.send(new UploadPartCommand({ Bucket: bucket, Key: "mpc/aborted",
        UploadId: a.UploadId, PartNumber: 1, Body: "a part" }));
    const before = await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket,
        Prefix: "mpc/" }));
    const ab = await s3.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: "mpc/aborted",
        UploadId: a.UploadId }));
    const after = await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket,
        Prefix: "mpc/" }));
    const gone = await failure(() => s3.send(new HeadObjectCommand({ Bucket: bucket,
        Key: "mpc/aborted" })));
    return { create_checksum_type: c.ChecksumType, create_algorithm: c.ChecksumAlgorithm,
        part_crcs: done.map((p) => p.ChecksumCRC32),
        want_part_crcs: parts.map(b64crc),
        listed_parts: (lp.Parts || []).map((p) => [p.PartNumber, p.Size, p.ChecksumCRC32]),
        complete_crc32: comp.ChecksumCRC32, complete_type: comp.ChecksumType,
        want_crc32: b64crc(whole), same: got.equals(whole), get_crc32: g.ChecksumCRC32,
        get_type: g.ChecksumType,
        uploads_before: (before.Uploads || []).map((u) => u.Key),
        abort_status: ab.$metadata.httpStatusCode,
        uploads_after: (after.Uploads || []).map((u) => u.Key), head_aborted: gone,
        wrong_complete: wrong, wrong_head: wrongHead, md5: md5(whole) };
});

await check("delete", async () => {
    const d = await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: "copy/of-one.bin" }));
    const gone = await failure(() => s3.send(new HeadObjectCommand({ Bucket: bucket,
        Key: "copy/of-one.bin" })));
    const m = await s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: [
        { Key: "list/a/1" }, { Key: "list/a/2" }, { Key: "list/never-existed" }] } }));
    const left = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: "list/a/" }));
    return { delete_status: d.$metadata.httpStatusCode, head_after_delete: gone,
        deleted: (m.Deleted || []).map((x) => x.Key).sort(), errors: m.Errors || [],
        left: (left.Contents || []).map((o) => o.Key) };
});

await check("errors", async () => {
    return {
        get_missing_key: await failure(() => s3.send(new GetObjectCommand({ Bucket: bucket,
            Key: "no/such/key" }))),
        head_missing_key: await failure(() => s3.send(new HeadObjectCommand({ Bucket: bucket,
            Key: "no/such/key" }))),
        get_missing_bucket: await failure(() => s3.send(new GetObjectCommand({
            Bucket: newBucket + "-never", Key: "k" }))),
        list_missing_bucket: await failure(() => s3.send(new ListObjectsV2Command({
            Bucket: newBucket + "-never" }))),
        put_missing_bucket: await failure(() => s3.send(new PutObjectCommand({
            Bucket: newBucket + "-never", Key: "k", Body: "x" }))),
    };
});

process.stdout.write(JSON.stringify(results) + "\n");
