//! A real browser for tests: Debian's Chromium, headless, renders a picture to PNG; and what the PNG shows.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

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

/// Where tests keep their output (screenshots): `target/test-output`, or under `$CARGO_TARGET_DIR`.
pub fn output_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let dir = target.join("test-output");
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// Renders `svg` (`width`×`height`) in headless Chromium and writes the screenshot to `png`.
pub fn screenshot_svg(svg: &str, width: u32, height: u32, png: &Path) -> Result<(), String> {
    let browser = chromium().ok_or(
        "Chromium is missing: run hack/install-prerequisites.sh (it installs Debian's chromium), or set NUMO_CHROMIUM",
    )?;
    let work = std::env::temp_dir().join(format!("numo-browser-{}-{}", std::process::id(), unique()));
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let page = work.join("picture.svg");
    std::fs::write(&page, svg).map_err(|e| format!("{}: {e}", page.display()))?;
    let _ = std::fs::remove_file(png);
    let mut child = Command::new(&browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--force-device-scale-factor=1"])
        .arg(format!("--window-size={width},{height}"))
        .arg(format!("--user-data-dir={}", work.join("profile").display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", browser.display()))?;
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            return Err("Chromium took more than 60 s to take the screenshot".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = std::fs::remove_dir_all(&work);
    if !status.success() || !png.is_file() {
        return Err(format!("Chromium exited with {status} and wrote no {}", png.display()));
    }
    Ok(())
}

/// Renders `svg` (its own `width` and `height` attributes give the window) in Chromium, keeps the screenshot and
/// the SVG as `<name>.png` and `<name>.svg` in [`output_dir`], and reads the screenshot back.
pub fn shoot(svg: &str, name: &str) -> Result<Picture, String> {
    let attribute = |key: &str| -> Result<u32, String> {
        svg.split(&format!(" {key}=\""))
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("the SVG has no {key}"))
    };
    let (width, height) = (attribute("width")?, attribute("height")?);
    let png = output_dir().join(format!("{name}.png"));
    std::fs::write(png.with_extension("svg"), svg).map_err(|e| e.to_string())?;
    screenshot_svg(svg, width, height, &png)?;
    Picture::read(&png)
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
        let mut decoder = png::Decoder::new(file);
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
        self.rgb.iter().any(|p| close(*p, colour, tolerance))
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
