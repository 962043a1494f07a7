//! A real browser for tests: Debian's Chromium, headless, renders a picture to PNG; and what the PNG shows.
//!
//! Chromium comes from `hack/install-prerequisites.sh`. Where it is missing, [`shoot`] fails and says so; a test
//! that starts with [`skipped`] is skipped instead when `NUMO_SKIP_BROWSER=1`.

use std::io::{Read, Write};
use std::ops::Range;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// How long Chromium may take to render a picture before it is killed.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Chromium: `$NUMO_CHROMIUM`, else `chromium` or `chromium-browser` on the PATH.
pub fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("NUMO_CHROMIUM").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// Whether browser tests are to be skipped (`NUMO_SKIP_BROWSER=1`); if so, says that `test` was skipped on the
/// test's stderr (uncaptured, so that it shows in every run).
pub fn skipped(test: &str) -> bool {
    if std::env::var("NUMO_SKIP_BROWSER").as_deref() != Ok("1") {
        return false;
    }
    let _ = writeln!(std::io::stderr(), "{test}: skipped, NUMO_SKIP_BROWSER=1");
    true
}

/// Where tests keep their output (screenshots): `target/test-output`, or under `$CARGO_TARGET_DIR`.
pub fn output_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let dir = target.join("test-output");
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// Renders `svg` in headless Chromium in a `width`×`height` window (a private profile, no sandbox as tests may run
/// as root) and writes the screenshot to `png`. Chromium is killed, with every process it started, after 60 s.
pub fn screenshot_svg(svg: &str, width: u32, height: u32, png: &Path) -> Result<(), String> {
    let browser = chromium().ok_or(
        "Chromium is missing: run hack/install-prerequisites.sh (it installs Debian's chromium), or set NUMO_CHROMIUM \
         to a Chromium binary",
    )?;
    let work = std::env::temp_dir().join(format!("numo-browser-{}-{}", std::process::id(), unique()));
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let result = run(&browser, &work, svg, width, height, png);
    let _ = std::fs::remove_dir_all(&work);
    result
}

/// Runs Chromium in `work` (its page, profile and output).
fn run(browser: &Path, work: &Path, svg: &str, width: u32, height: u32, png: &Path) -> Result<(), String> {
    let page = work.join("picture.svg");
    std::fs::write(&page, svg).map_err(|e| format!("{}: {e}", page.display()))?;
    let log = work.join("chromium.log");
    let log_file = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let _ = std::fs::remove_file(png);
    let mut child = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--force-device-scale-factor=1"])
        .arg(format!("--window-size={width},{height}"))
        .arg(format!("--user-data-dir={}", work.join("profile").display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file)
        // Its own process group, so that a timeout ends the renderer and helper processes too.
        .process_group(0)
        .spawn()
        .map_err(|e| {
            format!("cannot start {} (run hack/install-prerequisites.sh, or set NUMO_CHROMIUM): {e}", browser.display())
        })?;
    let Some(status) = crate::browser_script::wait_or_kill_group(&mut child, TIMEOUT, Duration::from_millis(50))?
    else {
        return Err(format!("Chromium took more than {}s to take the screenshot{}", TIMEOUT.as_secs(), tail(&log)));
    };
    if !status.success() || !png.is_file() {
        return Err(format!("Chromium exited with {status} and wrote no {}{}", png.display(), tail(&log)));
    }
    Ok(())
}

/// The last lines of Chromium's log, to say why it failed.
fn tail(log: &Path) -> String {
    let mut text = String::new();
    let _ = std::fs::File::open(log).and_then(|mut f| f.read_to_string(&mut text));
    let lines: Vec<&str> = text.lines().collect();
    let last = &lines[lines.len().saturating_sub(20)..];
    if last.is_empty() {
        String::new()
    } else {
        format!("; it said:\n{}", last.join("\n"))
    }
}

/// Renders `svg` (its root's `width` and `height` attributes give the window) in Chromium, keeps the screenshot and
/// the SVG as `<name>.png` and `<name>.svg` in [`output_dir`], and reads the screenshot back. Fails where the
/// screenshot is not exactly the SVG's size, so that pixels are where the SVG drew them.
pub fn shoot(svg: &str, name: &str) -> Result<Picture, String> {
    let root = svg.split_once('>').map_or(svg, |(root, _)| root);
    let attribute = |key: &str| -> Result<u32, String> {
        root.split(&format!(" {key}=\""))
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("the SVG's root element has no {key} in pixels: {root}"))
    };
    let (width, height) = (attribute("width")?, attribute("height")?);
    let png = output_dir().join(format!("{name}.png"));
    std::fs::write(png.with_extension("svg"), svg).map_err(|e| e.to_string())?;
    screenshot_svg(svg, width, height, &png)?;
    let picture = Picture::read(&png)?;
    if (picture.width, picture.height) != (width, height) {
        return Err(format!(
            "{} is {}×{}, the SVG {width}×{height}: Chromium did not render it at its size",
            png.display(),
            picture.width,
            picture.height
        ));
    }
    Ok(picture)
}

fn unique() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or_default()
}

/// A decoded PNG: its size and RGB pixels.
pub struct Picture {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    rgb: Vec<[u8; 3]>,
}

impl Picture {
    /// Reads a PNG file.
    pub fn read(path: &Path) -> Result<Self, String> {
        let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::decode(std::io::BufReader::new(file)).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Decodes a PNG (grey, grey and alpha, RGB or RGBA; alpha is dropped).
    pub fn decode(png: impl std::io::BufRead + std::io::Seek) -> Result<Self, String> {
        let mut decoder = png::Decoder::new(png);
        decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
        let mut reader = decoder.read_info().map_err(|e| e.to_string())?;
        let mut buffer = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buffer).map_err(|e| e.to_string())?;
        let channels = info.color_type.samples();
        let rgb = buffer[..info.buffer_size()]
            .chunks(channels)
            .map(|p| match channels {
                1 | 2 => [p[0], p[0], p[0]],
                _ => [p[0], p[1], p[2]],
            })
            .collect();
        Ok(Self { width: info.width, height: info.height, rgb })
    }

    /// The pixel at `x`, `y`.
    pub fn pixel(&self, x: u32, y: u32) -> [u8; 3] {
        self.rgb[(y * self.width + x) as usize]
    }

    /// How many separate runs of `colour` (within `tolerance` per channel) there are going down column `x`.
    pub fn runs_down(&self, x: u32, colour: [u8; 3], tolerance: u8) -> usize {
        let mut runs = 0;
        let mut inside = false;
        for y in 0..self.height {
            let here = close(self.pixel(x, y), colour, tolerance);
            if here && !inside {
                runs += 1;
            }
            inside = here;
        }
        runs
    }

    /// Whether `colour` (within `tolerance`) appears anywhere.
    pub fn contains(&self, colour: [u8; 3], tolerance: u8) -> bool {
        self.count_in(0..self.width, 0..self.height, colour, tolerance) > 0
    }

    /// How many pixels of `colour` (within `tolerance`) there are in columns `x` and rows `y` (cut to the picture).
    pub fn count_in(&self, x: Range<u32>, y: Range<u32>, colour: [u8; 3], tolerance: u8) -> usize {
        let (x, y) = (x.start..x.end.min(self.width), y.start..y.end.min(self.height));
        y.flat_map(|y| x.clone().map(move |x| (x, y)))
            .filter(|(x, y)| close(self.pixel(*x, *y), colour, tolerance))
            .count()
    }
}

fn close(a: [u8; 3], b: [u8; 3], tolerance: u8) -> bool {
    a.iter().zip(b).all(|(x, y)| x.abs_diff(y) <= tolerance)
}

/// `#RRGGBB` as RGB.
pub fn rgb(hex: &str) -> [u8; 3] {
    let value = u32::from_str_radix(hex.trim_start_matches('#'), 16).unwrap_or_default();
    [(value >> 16) as u8, (value >> 8) as u8, value as u8]
}

#[cfg(test)]
mod tests {
    use super::*;

    const WHITE: [u8; 3] = [255, 255, 255];
    const PURPLE: [u8; 3] = [0x5A, 0x2D, 0x82];

    /// A 3×7 RGB PNG, white, with purple at column 1 of rows 1–2 and 4, and a near-purple pixel at (2, 6).
    fn picture() -> Picture {
        let mut pixels = [WHITE; 3 * 7];
        for y in [1, 2, 4] {
            pixels[y * 3 + 1] = PURPLE;
        }
        pixels[6 * 3 + 2] = [0x5C, 0x2B, 0x84];
        let mut png = Vec::new();
        let mut encoder = png::Encoder::new(&mut png, 3, 7);
        encoder.set_color(png::ColorType::Rgb);
        let mut writer = encoder.write_header().unwrap_or_else(|e| panic!("{e}"));
        writer.write_image_data(&pixels.concat()).unwrap_or_else(|e| panic!("{e}"));
        writer.finish().unwrap_or_else(|e| panic!("{e}"));
        Picture::decode(std::io::Cursor::new(png)).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_png_is_read_pixel_by_pixel() {
        let p = picture();
        assert_eq!((p.width, p.height), (3, 7));
        assert_eq!(p.pixel(1, 1), PURPLE);
        assert_eq!(p.pixel(0, 1), WHITE);
        assert_eq!(p.runs_down(1, PURPLE, 0), 2, "rows 1–2 and row 4");
        assert_eq!(p.runs_down(0, PURPLE, 0), 0);
        assert_eq!(p.runs_down(2, PURPLE, 2), 1, "within the tolerance");
        assert_eq!(p.runs_down(2, PURPLE, 1), 0, "beyond it");
        assert_eq!(p.count_in(0..3, 0..7, PURPLE, 0), 3);
        assert_eq!(p.count_in(0..3, 3..100, PURPLE, 2), 2, "cut to the picture");
        assert!(p.contains(PURPLE, 0) && !p.contains([0, 0, 0], 10));
        assert_eq!(rgb("#5A2D82"), PURPLE);
    }
}
