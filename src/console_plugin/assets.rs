//! The console plugin's built files (`console-plugin/dist`: `plugin-manifest.json`, `plugin-entry.js`, the
//! chunks, their locales), by path, with the headers each is served with.
//!
//! The image's numo carries them in its binary (built with the `console-plugin` feature after `npm run build` in
//! `console-plugin/`), so the plugin ships with no second image. A numo built without that feature has none
//! ([`Assets::embedded`] is `None`) unless it is pointed at a folder ([`Assets::from_dir`]).

use std::collections::HashMap;
use std::path::Path;

use bytes::Bytes;

/// The file the console reads first: the plugin's name, version and extensions.
pub const MANIFEST: &str = "plugin-manifest.json";
/// The plugin's entry script, loaded by the console after the manifest.
pub const ENTRY: &str = "plugin-entry.js";

/// The plugin's files, keyed by their path relative to the build folder (`/` separated, no leading `/`).
#[derive(Clone, Debug, Default)]
pub struct Assets {
    files: HashMap<String, Bytes>,
}

/// One file as served: its bytes and the headers that describe it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Asset {
    /// The file's content.
    pub bytes: Bytes,
    /// Its `Content-Type`, from its extension.
    pub content_type: &'static str,
    /// Its `Cache-Control`: the manifest and the entry script keep their names across versions and are checked
    /// again on every load; the chunks are named by their content hash and may be kept.
    pub cache_control: &'static str,
}

#[cfg(feature = "console-plugin")]
static EMBEDDED: include_dir::Dir<'static> = include_dir::include_dir!("$CARGO_MANIFEST_DIR/console-plugin/dist");

impl Assets {
    /// The files built into this binary, if it was built with the `console-plugin` feature and they hold a
    /// plugin manifest.
    pub fn embedded() -> Option<Self> {
        #[cfg(feature = "console-plugin")]
        {
            let mut files = HashMap::new();
            collect_embedded(&EMBEDDED, &mut files);
            let assets = Self { files };
            if assets.files.contains_key(MANIFEST) {
                return Some(assets);
            }
        }
        None
    }

    /// The files under `dir` (a `console-plugin/dist` built by `npm run build`). Fails when `dir` cannot be read
    /// or holds no plugin manifest.
    pub fn from_dir(dir: &Path) -> std::io::Result<Self> {
        let mut files = HashMap::new();
        collect_dir(dir, dir, &mut files)?;
        if !files.contains_key(MANIFEST) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!(
                    "{} holds no {MANIFEST}: build the plugin first (cd console-plugin && npm ci && npm run build)",
                    dir.display()
                ),
            ));
        }
        Ok(Self { files })
    }

    /// Assets made of the given `(path, content)` pairs.
    pub fn from_files<P: Into<String>, B: Into<Bytes>>(files: impl IntoIterator<Item = (P, B)>) -> Self {
        Self { files: files.into_iter().map(|(path, bytes)| (path.into(), bytes.into())).collect() }
    }

    /// The file at the request path `path` (a leading `/` and a query are ignored), if there is one.
    pub fn get(&self, path: &str) -> Option<Asset> {
        let path = path.split(['?', '#']).next().unwrap_or_default().trim_start_matches('/');
        let bytes = self.files.get(path)?.clone();
        Some(Asset { bytes, content_type: content_type(path), cache_control: cache_control(path) })
    }

    /// Every file's path and size, sorted by path.
    pub fn files(&self) -> Vec<(&str, usize)> {
        let mut files: Vec<_> = self.files.iter().map(|(path, bytes)| (path.as_str(), bytes.len())).collect();
        files.sort_unstable();
        files
    }

    /// How many files there are.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether there are no files.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Their size in bytes, all together.
    pub fn total_bytes(&self) -> usize {
        self.files.values().map(Bytes::len).sum()
    }
}

#[cfg(feature = "console-plugin")]
fn collect_embedded(dir: &include_dir::Dir<'static>, files: &mut HashMap<String, Bytes>) {
    for file in dir.files() {
        let path = file.path().to_string_lossy().replace('\\', "/");
        files.insert(path, Bytes::from_static(file.contents()));
    }
    for sub in dir.dirs() {
        collect_embedded(sub, files);
    }
}

fn collect_dir(root: &Path, dir: &Path, files: &mut HashMap<String, Bytes>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir).map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", dir.display())))? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            collect_dir(root, &path, files)?;
        } else if let Ok(relative) = path.strip_prefix(root) {
            let key = relative.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
            files.insert(key, Bytes::from(std::fs::read(&path)?));
        }
    }
    Ok(())
}

/// The `Content-Type` of a file, from its extension; `application/octet-stream` for one not known.
pub fn content_type(path: &str) -> &'static str {
    let extension = path.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase()).unwrap_or_default();
    match extension.as_str() {
        "js" | "mjs" => "application/javascript; charset=utf-8",
        "json" | "map" => "application/json; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "html" => "text/html; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "ico" => "image/x-icon",
        "woff" => "font/woff",
        "woff2" => "font/woff2",
        "ttf" => "font/ttf",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// The `Cache-Control` of a file (see [`Asset::cache_control`]).
fn cache_control(path: &str) -> &'static str {
    if path == MANIFEST || path == ENTRY || path.starts_with("locales/") {
        "no-cache"
    } else {
        "public, max-age=3600"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plugin() -> Assets {
        Assets::from_files([
            (MANIFEST, &b"{\"name\":\"numo-console-plugin\"}"[..]),
            (ENTRY, b"window.loadPluginEntry()"),
            ("exposed-RolloutTab-chunk-1a2b.min.js", b"chunk"),
            ("locales/en/plugin__numo-console-plugin.json", b"{}"),
        ])
    }

    #[test]
    fn files_are_found_by_request_path_with_their_type_and_cache_policy() {
        let assets = plugin();
        let manifest = assets.get("/plugin-manifest.json").unwrap_or_else(|| panic!("the manifest"));
        assert_eq!(manifest.content_type, "application/json; charset=utf-8");
        assert_eq!(manifest.cache_control, "no-cache");
        let entry = assets.get("/plugin-entry.js?v=1").unwrap_or_else(|| panic!("the entry, query ignored"));
        assert_eq!(entry.content_type, "application/javascript; charset=utf-8");
        assert_eq!(entry.bytes, Bytes::from_static(b"window.loadPluginEntry()"));
        let chunk = assets.get("exposed-RolloutTab-chunk-1a2b.min.js").unwrap_or_else(|| panic!("a chunk"));
        assert_eq!(chunk.cache_control, "public, max-age=3600");
        let locale = assets.get("/locales/en/plugin__numo-console-plugin.json").unwrap_or_else(|| panic!("locale"));
        assert_eq!(locale.cache_control, "no-cache");
        assert_eq!(assets.len(), 4);
        assert_eq!(assets.total_bytes(), 30 + 24 + 5 + 2);
    }

    #[test]
    fn nothing_outside_the_files_is_served() {
        let assets = plugin();
        for path in ["/", "", "/../Cargo.toml", "/locales", "/etc/passwd", "/plugin-manifest.json/x"] {
            assert_eq!(assets.get(path), None, "{path}");
        }
    }

    #[test]
    fn content_types_cover_what_a_webpack_build_emits() {
        assert_eq!(content_type("a.CSS"), "text/css; charset=utf-8");
        assert_eq!(content_type("fonts/x.woff2"), "font/woff2");
        assert_eq!(content_type("a.js.map"), "application/json; charset=utf-8");
        assert_eq!(content_type("img/logo.svg"), "image/svg+xml");
        assert_eq!(content_type("LICENSE"), "application/octet-stream");
    }

    #[test]
    fn a_folder_without_a_manifest_is_refused_with_how_to_build_it() {
        let dir = std::env::temp_dir().join(format!("numo-assets-{}", std::process::id()));
        let _ = std::fs::create_dir_all(dir.join("locales/en"));
        let _ = std::fs::write(dir.join("locales/en/a.json"), "{}");
        let error = Assets::from_dir(&dir).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error.contains("npm run build"), "{error}");
        let _ = std::fs::write(dir.join(MANIFEST), "{}");
        let assets = Assets::from_dir(&dir).unwrap_or_else(|e| panic!("{e}"));
        assert!(assets.get("locales/en/a.json").is_some());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(not(feature = "console-plugin"))]
    #[test]
    fn a_build_without_the_feature_embeds_nothing() {
        assert!(Assets::embedded().is_none());
    }
}
