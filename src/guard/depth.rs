//! Measuring how deeply a JSON text nests, and naming the path to a point in it, in one pass over its bytes with a
//! heap-allocated stack: no recursion, so no nesting depth can exhaust the call stack or hit serde_json's recursion
//! limit. Strings are skipped with their escapes (`"\"{"` holds no bracket); the text is assumed to be valid JSON (it
//! comes from serde_json's `RawValue`, which checked it) and a malformed text gives a best-effort answer, never a
//! panic.

use std::fmt;
use std::ops::Range;

/// One step of a path into a JSON document: an object's key or an array's index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    /// A key of an object.
    Key(String),
    /// An index into an array.
    Index(usize),
}

/// A path into a JSON document, shown as `spec.jobSpec.template` or `items[0].name` (keys that are not plain words
/// are quoted: `metadata.labels["app.kubernetes.io/name"]`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Path(pub Vec<Segment>);

impl Path {
    /// The first `max` segments, with `…` marking the cut when there were more.
    pub fn shortened(&self, max: usize) -> String {
        if self.0.len() <= max {
            return self.to_string();
        }
        format!("{}…", Path(self.0[..max].to_vec()))
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("(the object itself)");
        }
        for (i, segment) in self.0.iter().enumerate() {
            match segment {
                Segment::Index(index) => write!(f, "[{index}]")?,
                Segment::Key(key) if is_word(key) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(key)?;
                }
                Segment::Key(key) => write!(f, "[{key:?}]")?,
            }
        }
        Ok(())
    }
}

fn is_word(key: &str) -> bool {
    !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// How deeply a document nests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Depth {
    /// The most objects and arrays enclosing one another (`{}` is 1, `{"a":[1]}` is 2, a scalar 0).
    pub levels: usize,
    /// Where the nesting first went beyond the limit asked for, if it did.
    pub beyond_limit: Option<Beyond>,
}

/// Where a document nests beyond a limit.
///
/// Nesting inside `metadata.managedFields` (which mirrors the object's own fields a few levels deeper) is named only
/// when nothing else goes beyond the limit, so the path points at the field a person wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Beyond {
    /// The path to the first container opened one level beyond the limit.
    pub path: Path,
    /// How deeply that part of the document nests: the object's own fields, or else `managedFields`.
    pub levels: usize,
}

/// Measures how deeply `json` nests, noting where it first goes beyond `limit` levels.
pub fn measure(json: &str, limit: usize) -> Depth {
    let mut cursor = Cursor::new(json);
    // Levels of the object's own fields and of `metadata.managedFields`; where each first went beyond the limit.
    let (mut levels, mut managed_levels) = (0, 0);
    let (mut beyond, mut beyond_in_managed_fields) = (None, None);
    // The depth of the `metadata.managedFields` array while the cursor is inside it.
    let mut managed_fields_at: Option<usize> = None;
    while let Some(token) = cursor.next_token() {
        let depth = cursor.stack.len();
        match token {
            Token::Open => {}
            Token::Close => {
                if managed_fields_at.is_some_and(|at| depth < at) {
                    managed_fields_at = None;
                }
                continue;
            }
            Token::Other => continue,
        }
        if depth == 3 && cursor.is_managed_fields() {
            managed_fields_at = Some(depth);
        }
        let in_managed_fields = managed_fields_at.is_some();
        if in_managed_fields {
            managed_levels = managed_levels.max(depth);
        } else {
            levels = levels.max(depth);
        }
        if depth == limit + 1 {
            let first = if in_managed_fields { &mut beyond_in_managed_fields } else { &mut beyond };
            if first.is_none() {
                // The path to the container just opened: the positions in the frames enclosing it.
                *first = Some(cursor.path(depth - 1));
            }
        }
    }
    let beyond_limit = match (beyond, beyond_in_managed_fields) {
        (Some(path), _) => Some(Beyond { path, levels }),
        (None, Some(path)) => Some(Beyond { path, levels: managed_levels }),
        (None, None) => None,
    };
    Depth { levels: levels.max(managed_levels), beyond_limit }
}

/// The path to the value being read when `offset` bytes of `json` were read (as serde_json reports an error's
/// position): the key or index of every enclosing container.
pub fn path_at(json: &str, offset: usize) -> Path {
    let mut cursor = Cursor::new(json);
    while cursor.position < offset && cursor.next_token().is_some() {}
    cursor.path(cursor.stack.len())
}

/// The byte offset of serde_json's one-based `line` and its `column` (bytes read on that line).
pub fn offset_of(json: &str, line: usize, column: usize) -> usize {
    let line_start = if line <= 1 {
        0
    } else {
        json.bytes().enumerate().filter(|(_, b)| *b == b'\n').nth(line - 2).map_or(json.len(), |(i, _)| i + 1)
    };
    (line_start + column).min(json.len())
}

/// What the cursor just passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    Open,
    Close,
    Other,
}

/// An enclosing object or array, with where in it the cursor is.
#[derive(Clone, Debug)]
enum Frame {
    /// An object: the byte range (quotes included) of the key read last, and whether a key comes next.
    Object { key: Option<Range<usize>>, expect_key: bool },
    /// An array: the index of the current element.
    Array { index: usize },
}

struct Cursor<'a> {
    json: &'a str,
    position: usize,
    stack: Vec<Frame>,
}

impl<'a> Cursor<'a> {
    fn new(json: &'a str) -> Self {
        Self { json, position: 0, stack: Vec::new() }
    }

    /// Reads up to the next structural byte (or a whole string); `None` at the end of the text.
    fn next_token(&mut self) -> Option<Token> {
        let bytes = self.json.as_bytes();
        let &byte = bytes.get(self.position)?;
        let start = self.position;
        self.position += 1;
        let token = match byte {
            b'"' => {
                self.position = end_of_string(bytes, self.position);
                if let Some(Frame::Object { key, expect_key }) = self.stack.last_mut() {
                    if *expect_key {
                        *key = Some(start..self.position);
                        *expect_key = false;
                    }
                }
                Token::Other
            }
            b'{' => {
                self.stack.push(Frame::Object { key: None, expect_key: true });
                Token::Open
            }
            b'[' => {
                self.stack.push(Frame::Array { index: 0 });
                Token::Open
            }
            b'}' | b']' => {
                self.stack.pop();
                Token::Close
            }
            b',' => {
                match self.stack.last_mut() {
                    Some(Frame::Object { expect_key, .. }) => *expect_key = true,
                    Some(Frame::Array { index }) => *index += 1,
                    None => {}
                }
                Token::Other
            }
            _ => Token::Other,
        };
        Some(token)
    }

    /// Whether the cursor is in `metadata.managedFields` of the top-level object, at its array's level.
    fn is_managed_fields(&self) -> bool {
        let key = |frame: &Frame| match frame {
            Frame::Object { key: Some(range), .. } => self.json.get(range.clone()),
            _ => None,
        };
        matches!(self.stack.as_slice(), [root, metadata, Frame::Array { .. }]
            if key(root) == Some("\"metadata\"") && key(metadata) == Some("\"managedFields\""))
    }

    /// The path made of the positions in the outermost `frames` enclosing frames.
    fn path(&self, frames: usize) -> Path {
        let segments = self.stack[..frames.min(self.stack.len())]
            .iter()
            .filter_map(|frame| match frame {
                Frame::Object { key: Some(range), .. } => Some(Segment::Key(self.key(range.clone()))),
                Frame::Object { key: None, .. } => None,
                Frame::Array { index } => Some(Segment::Index(*index)),
            })
            .collect();
        Path(segments)
    }

    /// The text of the key at `range` (quotes included), unescaped.
    fn key(&self, range: Range<usize>) -> String {
        let quoted = self.json.get(range).unwrap_or_default();
        serde_json::from_str(quoted).unwrap_or_else(|_| quoted.trim_matches('"').to_string())
    }
}

/// The position just after the closing quote of the string whose content starts at `from`.
fn end_of_string(bytes: &[u8], mut from: usize) -> usize {
    while let Some(&byte) = bytes.get(from) {
        match byte {
            b'\\' => from += 2,
            b'"' => return from + 1,
            _ => from += 1,
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(levels: usize, leaf: &str) -> String {
        format!("{}{leaf}{}", "{\"a\":".repeat(levels), "}".repeat(levels))
    }

    #[test]
    fn counts_objects_and_arrays_alike() {
        assert_eq!(measure("1", 8).levels, 0);
        assert_eq!(measure("{}", 8).levels, 1);
        assert_eq!(measure(r#"{"a":[1,{"b":[]}]}"#, 8).levels, 4);
        assert_eq!(measure(r#"[[[[]]],[]]"#, 8).levels, 4);
        assert_eq!(measure(r#"{"a":{},"b":{},"c":{"d":{}}}"#, 8).levels, 3, "siblings do not add up");
    }

    #[test]
    fn brackets_inside_strings_do_not_count() {
        let json = r#"{"a":"{{{[[[","b":"]]]}}}","c":{"{":"["}}"#;
        assert_eq!(measure(json, 8).levels, 2);
    }

    #[test]
    fn escaped_quotes_and_backslashes_keep_the_string_open_or_closed() {
        // `\"` does not end the string, so the brackets after it are text.
        assert_eq!(measure(r#"{"a":"\"{{{[[["}"#, 8).levels, 1);
        // `\\` is a backslash; the quote after it ends the string, so the object after it counts.
        assert_eq!(measure(r#"{"a":"\\","b":{"c":{}}}"#, 8).levels, 3);
        // A key with an escaped quote is read as one key.
        assert_eq!(measure(r#"{"k\"{":{"x":[]}}"#, 8).levels, 3);
        assert_eq!(path_at(r#"{"k\"{":{"x":[1]}}"#, 14).to_string(), r#"["k\"{"].x[0]"#);
        // Unicode escapes and multi-byte characters are plain text.
        assert_eq!(measure("{\"\\u007b\":\"é{\",\"b\":[]}", 8).levels, 2);
    }

    #[test]
    fn names_where_the_nesting_first_goes_beyond_the_limit() {
        let json = format!(r#"{{"spec":{{"jobSpec":{}}}}}"#, nested(150, "1"));
        let depth = measure(&json, 64);
        assert_eq!(depth.levels, 152);
        let beyond = depth.beyond_limit.expect("beyond the limit");
        assert_eq!(beyond.levels, 152);
        assert_eq!(beyond.path.0.len(), 64, "the path to the container opened at depth 65");
        assert_eq!(beyond.path.shortened(4), "spec.jobSpec.a.a…");
        assert_eq!(measure(&json, 152).beyond_limit, None);
    }

    #[test]
    fn names_array_indices_in_the_path() {
        let json = r#"{"items":[{},{"x":[[{"deep":{}}]]}]}"#;
        let depth = measure(json, 5);
        assert_eq!(depth.levels, 7);
        assert_eq!(depth.beyond_limit.map(|b| b.path.to_string()).as_deref(), Some("items[1].x[0][0]"));
    }

    #[test]
    fn prefers_a_path_outside_managed_fields() {
        let managed = format!(r#"{{"managedFields":[{{"fieldsV1":{{"f:spec":{}}}}}]}}"#, nested(20, "{}"));
        let json = format!(r#"{{"metadata":{managed},"spec":{}}}"#, nested(20, "1"));
        let depth = measure(&json, 10);
        assert_eq!(depth.levels, 26, "managedFields nest deepest");
        let beyond = depth.beyond_limit.expect("beyond");
        assert_eq!((beyond.path.shortened(2).as_str(), beyond.levels), ("spec.a…", 21));
        let only_managed = format!(r#"{{"metadata":{managed},"spec":{{}}}}"#);
        let beyond = measure(&only_managed, 10).beyond_limit.expect("beyond");
        assert_eq!(beyond.path.shortened(4), "metadata.managedFields[0].fieldsV1…");
        assert_eq!(beyond.levels, 26);
        // A field of that name elsewhere is not managedFields.
        let elsewhere = format!(r#"{{"spec":{{"managedFields":[{}]}}}}"#, nested(20, "1"));
        assert_eq!(measure(&elsewhere, 10).beyond_limit.map(|b| b.levels), Some(23));
    }

    #[test]
    fn measures_any_depth_without_recursion() {
        let deep = "[".repeat(1_000_000) + &"]".repeat(1_000_000);
        assert_eq!(measure(&deep, 64).levels, 1_000_000);
    }

    #[test]
    fn names_the_value_at_an_error_position() {
        let json = r#"{"spec":{"mutexRules":[{"name":"a"},{"name":3}]}}"#;
        let offset = json.find('3').expect("the 3") + 1;
        assert_eq!(path_at(json, offset).to_string(), "spec.mutexRules[1].name");
        assert_eq!(path_at(json, 0).to_string(), "(the object itself)");
        let pretty = "{\n  \"a\": {\n    \"b\": true\n  }\n}";
        assert_eq!(offset_of(pretty, 3, 13), pretty.find("true").expect("true") + 4);
        assert_eq!(path_at(pretty, offset_of(pretty, 3, 13)).to_string(), "a.b");
        assert_eq!(offset_of("{}", 9, 9), 2, "clamped to the text");
    }

    #[test]
    fn malformed_text_gives_an_answer_without_panicking() {
        for text in ["", "}", "]]]", "{\"a", "{\"a\\", "[[{", "\"\\"] {
            let _ = measure(text, 2);
            let _ = path_at(text, text.len());
        }
        assert_eq!(measure("[[{", 8).levels, 3);
    }
}
