//! `console-plugin/src/api-types.ts`: the TypeScript types of numo's kinds the console plugin reads
//! (`MutexRunConfig`, `MutexTarget`), written from the CRD schemas numo generates (`numo::crdgen`, the same as
//! `config/crd`) so that the plugin holds no hand-written copy of numo's API.
//!
//! Every object schema of a kind becomes one exported type, the whole spec and status tree: a field added to
//! `src/api` reaches the plugin with no hand edit. A type is named after the Rust type the schema comes from
//! (`NodeProgress`, `JobRecord`: see [`crate::rust_names`]), or, where the schema is no Rust type of numo's, after
//! its parent type and field. Each field carries its schema `description` as a doc comment; a field the schema does
//! not require is optional (`?`), a `nullable` one admits `null`; an enum is typed with the union of
//! `api-names.ts` that has its values (`NodePhase`, `Step`...), or else with a union of its literals; a string numo
//! fills from such a union though the schema does not say so is listed in [`STRING_UNIONS`]. Arrays are `T[]`,
//! maps (`additionalProperties`) `Record<string, T>`, `x-kubernetes-int-or-string` `number | string`, date-times
//! `string`, free-form objects `Record<string, unknown>`. The types are sorted by name, and their fields as the
//! schema lists them (by name), so the file changes only when the schema does; it is written as prettier would
//! format it.
//!
//! `cargo xtask plugin-types` writes the file; `cargo xtask plugin-types --check` and `xtask/tests/generated.rs`
//! fail when the committed one differs.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Context};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};

use crate::plugin_names::{self, Union};
use crate::rust_names::{self, RustType, ITEMS, VALUES};

/// Where the file lives, relative to the repository root.
pub const PATH: &str = "console-plugin/src/api-types.ts";

/// Fields that are plain strings in the schema but that numo fills only from a union of `api-names.ts`: `(type,
/// field, union)`.
pub const STRING_UNIONS: &[(&str, &str, &str)] = &[("JobRecord", "phase", "JobPhase")];

/// The fields of every Kubernetes object, which the SDK's `K8sResourceCommon` types.
const COMMON_FIELDS: &[&str] = &["apiVersion", "kind", "metadata"];

/// prettier's line width in the plugin (`.prettierrc.yaml`).
const WIDTH: usize = 120;

/// One kind the plugin reads: its schema, and the Rust types at its paths.
struct Kind {
    schema: JSONSchemaProps,
    rust: BTreeMap<String, RustType>,
}

/// The kinds the plugin reads, in the file's order of generation (the output is sorted by type anyway).
fn kinds() -> anyhow::Result<Vec<Kind>> {
    Ok(vec![
        Kind {
            schema: plugin_names::schema_of("MutexRunConfig")?,
            rust: rust_names::of::<numo::api::MutexRunConfig>(),
        },
        Kind { schema: plugin_names::schema_of("MutexTarget")?, rust: rust_names::of::<numo::api::MutexTarget>() },
    ])
}

/// One exported type: its doc comment and declaration, and the schema path it was first found at.
struct Declaration {
    text: String,
    path: String,
}

/// The types found so far, and the unions of `api-names.ts` they use.
pub(crate) struct Generator {
    unions: Vec<Union>,
    declarations: BTreeMap<String, Declaration>,
    imports: BTreeSet<String>,
}

impl Generator {
    /// A generator that knows the unions of `api-names.ts`.
    pub(crate) fn new() -> anyhow::Result<Self> {
        Ok(Self { unions: plugin_names::unions()?, declarations: BTreeMap::new(), imports: BTreeSet::new() })
    }

    /// The declarations found, sorted by name, after the import of the unions they use; `header` first.
    pub(crate) fn file(&self, header: &str) -> String {
        let mut out = header.to_string();
        if !self.imports.is_empty() {
            let names: Vec<&str> = self.imports.iter().map(String::as_str).collect();
            let line = format!("import type {{ {} }} from './api-names';", names.join(", "));
            if line.len() <= WIDTH {
                let _ = writeln!(out, "{line}");
            } else {
                let _ = writeln!(out, "import type {{");
                for name in names {
                    let _ = writeln!(out, "  {name},");
                }
                let _ = writeln!(out, "}} from './api-names';");
            }
        }
        for declaration in self.declarations.values() {
            out.push('\n');
            out.push_str(&declaration.text);
        }
        out
    }

    /// The TypeScript type of the schema `node` at `path`, which the Rust types `rust` name; `fallback` names an
    /// object that is no Rust type.
    pub(crate) fn type_of(
        &mut self,
        node: &JSONSchemaProps,
        rust: &BTreeMap<String, RustType>,
        path: &str,
        fallback: &str,
    ) -> anyhow::Result<String> {
        let base = if node.x_kubernetes_int_or_string == Some(true) {
            "number | string".to_string()
        } else if let Some(values) = &node.enum_ {
            let values = values
                .iter()
                .map(|v| {
                    v.0.as_str().map(str::to_string).with_context(|| format!("{path}: an enum value not a string"))
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            self.enum_type(&values)
        } else {
            match node.type_.as_deref() {
                Some("string") => "string".to_string(),
                Some("integer" | "number") => "number".to_string(),
                Some("boolean") => "boolean".to_string(),
                Some("array") => {
                    let items = match &node.items {
                        Some(JSONSchemaPropsOrArray::Schema(items)) => items,
                        _ => bail!("{path}: an array without one schema for its items"),
                    };
                    let item = self.type_of(items, rust, &format!("{path}{ITEMS}"), fallback)?;
                    if item.contains(' ') {
                        format!("({item})[]")
                    } else {
                        format!("{item}[]")
                    }
                }
                Some("object") if node.properties.as_ref().is_some_and(|p| !p.is_empty()) => {
                    self.object(node, rust, path, fallback)?
                }
                Some("object") => match &node.additional_properties {
                    Some(JSONSchemaPropsOrBool::Schema(values)) => {
                        let value =
                            self.type_of(values, rust, &format!("{path}{VALUES}"), &format!("{fallback}Value"))?;
                        format!("Record<string, {value}>")
                    }
                    _ => "Record<string, unknown>".to_string(),
                },
                _ => "unknown".to_string(),
            }
        };
        Ok(if node.nullable == Some(true) { format!("{base} | null") } else { base })
    }

    /// The union of `api-names.ts` with exactly these values, or else a union of the literals.
    fn enum_type(&mut self, values: &[String]) -> String {
        match self.unions.iter().find(|u| u.values == values) {
            Some(union) => {
                self.imports.insert(union.name.clone());
                union.name.clone()
            }
            None => values.iter().map(|v| quoted(v)).collect::<Vec<_>>().join(" | "),
        }
    }

    /// Declares the object type at `path` (once: the same Rust type met again must have the same fields) and
    /// returns its name.
    fn object(
        &mut self,
        node: &JSONSchemaProps,
        rust: &BTreeMap<String, RustType>,
        path: &str,
        fallback: &str,
    ) -> anyhow::Result<String> {
        let (name, doc) = match rust.get(path) {
            Some(found) => (found.name.clone(), found.doc.clone().or_else(|| node.description.clone())),
            None => (fallback.to_string(), node.description.clone()),
        };
        let mut text = String::new();
        if let Some(doc) = &doc {
            comment(&mut text, "", doc);
        }
        let _ = writeln!(text, "export type {name} = {{");
        self.fields(&mut text, node, rust, path, &name, &[])?;
        text.push_str("};\n");
        self.declare(name.clone(), text, path)?;
        Ok(name)
    }

    /// The fields of the object `node` (but those in `skip`), one per line with its doc comment.
    fn fields(
        &mut self,
        text: &mut String,
        node: &JSONSchemaProps,
        rust: &BTreeMap<String, RustType>,
        path: &str,
        name: &str,
        skip: &[&str],
    ) -> anyhow::Result<()> {
        let required = node.required.clone().unwrap_or_default();
        for (field, schema) in node.properties.iter().flatten() {
            if skip.contains(&field.as_str()) {
                continue;
            }
            let at = rust_names::join(path, field);
            let field_type = match STRING_UNIONS.iter().find(|(t, f, _)| *t == name && f == field) {
                Some((_, _, union)) => {
                    if !self.unions.iter().any(|u| u.name == *union) {
                        bail!("{at}: api-names.ts has no union {union}");
                    }
                    self.imports.insert(union.to_string());
                    union.to_string()
                }
                None => self.type_of(schema, rust, &at, &format!("{name}{}", pascal(field)))?,
            };
            if let Some(doc) = &schema.description {
                comment(text, "  ", doc);
            }
            let optional = if required.contains(field) { "" } else { "?" };
            let _ = writeln!(text, "  {}{optional}: {field_type};", property(field));
        }
        Ok(())
    }

    fn declare(&mut self, name: String, text: String, path: &str) -> anyhow::Result<()> {
        if self.unions.iter().any(|u| u.name == name) {
            bail!("{path}: the type {name} would have the name of a union of api-names.ts; rename one");
        }
        match self.declarations.get(&name) {
            Some(known) if known.text != text => {
                bail!("{path} and {} are both named {name} but differ; rename one", known.path)
            }
            Some(_) => {}
            None => {
                self.declarations.insert(name, Declaration { text, path: path.to_string() });
            }
        }
        Ok(())
    }

    /// The kind itself: the SDK's common fields and the schema's own (`spec`, `status`).
    fn kind(&mut self, kind: &Kind) -> anyhow::Result<()> {
        let root = kind.rust.get("").context("no Rust type at the root")?;
        let mut text = String::new();
        if let Some(doc) = kind.schema.description.as_ref().or(root.doc.as_ref()) {
            comment(&mut text, "", doc);
        }
        let _ = writeln!(text, "export type {} = K8sResourceCommon & {{", root.name);
        self.fields(&mut text, &kind.schema, &kind.rust, "", &root.name, COMMON_FIELDS)?;
        text.push_str("};\n");
        self.declare(root.name.clone(), text, &root.name)
    }
}

/// The file's content.
pub fn generate() -> anyhow::Result<String> {
    let mut generator = Generator::new()?;
    for kind in kinds()? {
        generator.kind(&kind)?;
    }
    Ok(generator.file(
        "// Generated by `cargo xtask plugin-types` from numo's API (src/api, through the CRD schemas that config/crd\n\
         // holds): do not edit. `cargo test -p xtask` fails while this file differs from what numo's sources generate.\n\
         import type { K8sResourceCommon } from '@openshift-console/dynamic-plugin-sdk';\n",
    ))
}

/// Whether the committed file is what numo's sources generate: `None` when it is, else what differs.
pub fn drift(root: &Path) -> anyhow::Result<Option<String>> {
    Ok(crate::generated::drift(root, PATH, &generate()?))
}

/// Writes the file; returns whether it changed.
pub fn write(root: &Path) -> anyhow::Result<bool> {
    crate::generated::write(root, PATH, &generate()?)
}

/// A `/** */` doc comment at `indent`: on one line when it fits, else one ` * ` line per line of `doc`, a line too
/// long for the width broken between words.
fn comment(out: &mut String, indent: &str, doc: &str) {
    let doc = doc.trim().replace("*/", "*\\/");
    let lines: Vec<&str> = doc.lines().map(str::trim_end).collect();
    if let [line] = lines.as_slice() {
        if indent.len() + line.len() + "/**  */".len() <= WIDTH {
            let _ = writeln!(out, "{indent}/** {line} */");
            return;
        }
    }
    let _ = writeln!(out, "{indent}/**");
    let room = WIDTH - indent.len() - " * ".len();
    for line in lines {
        if line.is_empty() {
            let _ = writeln!(out, "{indent} *");
        }
        for part in wrapped(line, room) {
            let _ = writeln!(out, "{indent} * {part}");
        }
    }
    let _ = writeln!(out, "{indent} */");
}

/// `line` as it is when it fits in `room` characters, else broken between words into lines that do (a longer
/// word gets a line of its own).
fn wrapped(line: &str, room: usize) -> Vec<String> {
    if line.len() <= room {
        return vec![line.to_string()];
    }
    let mut lines: Vec<String> = Vec::new();
    let mut current = String::new();
    for word in line.split_whitespace() {
        if !current.is_empty() && current.len() + 1 + word.len() > room {
            lines.push(std::mem::take(&mut current));
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(word);
    }
    if !current.is_empty() {
        lines.push(current);
    }
    lines
}

/// A field's name as a property key: bare when it is an identifier, else quoted.
fn property(name: &str) -> String {
    let identifier = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if identifier {
        name.to_string()
    } else {
        quoted(name)
    }
}

fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// `camelCase` (or `kebab-case`) as `PascalCase`.
fn pascal(name: &str) -> String {
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map(|c| c.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generator() -> Generator {
        Generator {
            unions: vec![Union { name: "Colour".to_string(), values: vec!["Red".to_string(), "Blue".to_string()] }],
            declarations: BTreeMap::new(),
            imports: BTreeSet::new(),
        }
    }

    fn schema(value: serde_json::Value) -> JSONSchemaProps {
        serde_json::from_value(value).expect("a schema")
    }

    fn named(path: &str, name: &str) -> BTreeMap<String, RustType> {
        BTreeMap::from([(path.to_string(), RustType { name: name.to_string(), doc: Some("The thing.".to_string()) })])
    }

    #[test]
    fn each_schema_shape_has_its_typescript_type() {
        let node = schema(serde_json::json!({
            "type": "object",
            "required": ["colour"],
            "properties": {
                "colour": { "type": "string", "enum": ["Red", "Blue"], "description": "Its colour." },
                "shade": { "type": "string", "enum": ["Light", "Dark"], "nullable": true },
                "size": { "x-kubernetes-int-or-string": true },
                "labels": { "type": "object", "additionalProperties": { "type": "string" } },
                "extra": { "type": "object", "x-kubernetes-preserve-unknown-fields": true },
                "tags": { "type": "array", "items": { "type": "string", "nullable": true } },
                "owner": { "type": "object", "properties": { "name": { "type": "string" } } },
                "app.kubernetes.io/name": { "type": "string" },
            },
        }));
        let mut generator = generator();
        let name = generator.type_of(&node, &named("thing", "Thing"), "thing", "Fallback").expect("a type");
        assert_eq!(name, "Thing");
        assert_eq!(generator.imports, BTreeSet::from(["Colour".to_string()]));
        let thing = &generator.declarations["Thing"].text;
        for expected in [
            "/** The thing. */\nexport type Thing = {\n",
            "  'app.kubernetes.io/name'?: string;\n",
            "  /** Its colour. */\n  colour: Colour;\n",
            "  extra?: Record<string, unknown>;\n",
            "  labels?: Record<string, string>;\n",
            "  owner?: ThingOwner;\n",
            "  shade?: 'Light' | 'Dark' | null;\n",
            "  size?: number | string;\n",
            "  tags?: (string | null)[];\n",
        ] {
            assert!(thing.contains(expected), "{expected:?} not in\n{thing}");
        }
        // An object that is no Rust type is named after its parent and field.
        assert!(generator.declarations["ThingOwner"].text.contains("  name?: string;\n"));
    }

    #[test]
    fn a_name_taken_twice_or_by_a_union_is_refused() {
        let object = |field: &str| {
            schema(serde_json::json!({ "type": "object", "properties": { field: { "type": "string" } } }))
        };
        let mut generator = generator();
        generator.type_of(&object("a"), &named("x", "Thing"), "x", "X").expect("a type");
        // The same fields again are the same type.
        generator.type_of(&object("a"), &named("y", "Thing"), "y", "Y").expect("the same type");
        let error = generator.type_of(&object("b"), &named("z", "Thing"), "z", "Z").expect_err("two types");
        assert!(error.to_string().contains("are both named Thing"), "{error}");
        let error = generator.type_of(&object("a"), &named("w", "Colour"), "w", "W").expect_err("a union's name");
        assert!(error.to_string().contains("api-names.ts"), "{error}");
    }

    #[test]
    fn doc_comments_fit_the_width_and_never_end_early() {
        let mut out = String::new();
        comment(&mut out, "  ", "Short.");
        assert_eq!(out, "  /** Short. */\n");
        let mut out = String::new();
        comment(&mut out, "  ", &format!("{} ends */ here", "word ".repeat(40)));
        assert!(out.starts_with("  /**\n   * word"), "{out}");
        assert!(out.lines().all(|line| line.len() <= WIDTH), "{out}");
        assert!(out.contains("ends *\\/ here") && out.ends_with("   */\n"), "{out}");
    }

    #[test]
    fn fields_are_pascal_cased_for_names_and_quoted_when_no_identifier() {
        assert_eq!(pascal("blackoutWindows"), "BlackoutWindows");
        assert_eq!(pascal("match-labels"), "MatchLabels");
        assert_eq!(property("skipTLSVerify"), "skipTLSVerify");
        assert_eq!(property("x-y"), "'x-y'");
    }
}
