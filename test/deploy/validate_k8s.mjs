// Validates Kubernetes manifests offline: node validate_k8s.mjs FILE.yaml [...]
// Each document is checked against the Kubernetes OpenAPI schemas compiled into the npm
// package kubernetes-models (types, enums, required fields, formats) and, for built-in
// kinds, against the field lists of @kubernetes/client-node's models (unknown fields, which
// the OpenAPI schemas allow but the API server's strict field validation refuses).
// Prints one line per object; exits 1 if any object is invalid.
// Resolved from .deploy-tools/node_modules (NODE_PATH does not apply to ES modules).
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const tools = process.env.HOARD_DEPLOY_TOOLS || path.join(here, "../../.deploy-tools");
const nm = path.join(tools, "node_modules");
const req = createRequire(path.join(nm, "noop.js"));
const yaml = req("js-yaml");
const load = (p) => import(pathToFileURL(path.join(nm, p)).href);
const models = await load("@kubernetes/client-node/dist/gen/models/ObjectSerializer.js");

const PRIMITIVE = new Set(["string", "boolean", "number", "integer", "any", "object",
                           "Date", "IntOrString", "RequestFile"]);

function modelPath(apiVersion, kind) {
    if (apiVersion === "monitoring.coreos.com/v1")
        return `@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/${kind}.js`;
    if (apiVersion === "v1") return `kubernetes-models/v1/${kind}.js`;
    return `kubernetes-models/${apiVersion}/${kind}.js`;
}

// client-node class name: V1Service, V1StatefulSet, V1PodDisruptionBudget, ...
function className(apiVersion) {
    const v = apiVersion.split("/").pop();
    return v.charAt(0).toUpperCase() + v.slice(1);
}

function unknownFields(value, type, where, out) {
    if (value === null || value === undefined || PRIMITIVE.has(type)) return;
    let m = /^Array<(.+)>$/.exec(type);
    if (m) {
        if (Array.isArray(value)) value.forEach((v, i) => unknownFields(v, m[1], `${where}[${i}]`, out));
        return;
    }
    m = /^\{ \[key: string\]: (.+); \}$/.exec(type);
    if (m) {
        for (const [k, v] of Object.entries(value)) unknownFields(v, m[1], `${where}.${k}`, out);
        return;
    }
    const cls = models[type];
    if (!cls || typeof cls.getAttributeTypeMap !== "function") return; // unknown type: no opinion
    if (typeof value !== "object" || Array.isArray(value)) return; // kubernetes-models reports it
    const attrs = new Map(cls.getAttributeTypeMap().map((a) => [a.baseName, a.type]));
    for (const [k, v] of Object.entries(value)) {
        if (!attrs.has(k)) out.push(`${where}.${k}: unknown field (not in ${type})`);
        else unknownFields(v, attrs.get(k), `${where}.${k}`, out);
    }
}

let bad = 0, n = 0;
for (const file of process.argv.slice(2)) {
    for (const doc of yaml.loadAll(readFileSync(file, "utf8"))) {
        if (!doc) continue;
        n++;
        const id = `${doc.kind || "?"}/${doc.metadata?.name || "?"}`;
        const errs = [];
        if (!doc.apiVersion || !doc.kind) {
            errs.push("missing apiVersion or kind");
        } else {
            let mod;
            try {
                mod = await load(modelPath(doc.apiVersion, doc.kind));
            } catch (e) {
                errs.push(`no schema for ${doc.apiVersion} ${doc.kind}`);
            }
            const Model = mod && mod[doc.kind];
            if (Model) {
                try {
                    new Model(doc).validate();
                } catch (e) {
                    errs.push(e.message);
                }
            } else if (mod) {
                errs.push(`no model ${doc.kind} in ${modelPath(doc.apiVersion, doc.kind)}`);
            }
            if (!doc.apiVersion.includes(".") || doc.apiVersion.endsWith(".k8s.io/v1"))
                unknownFields(doc, className(doc.apiVersion) + doc.kind, id, errs);
        }
        if (errs.length) {
            bad++;
            console.log(`INVALID ${file}: ${id}`);
            for (const e of errs) console.log(`  ${e}`);
        } else {
            console.log(`valid   ${file}: ${id} (${doc.apiVersion})`);
        }
    }
}
console.log(`${n} object(s), ${bad} invalid`);
process.exit(bad || n === 0 ? 1 : 0);
