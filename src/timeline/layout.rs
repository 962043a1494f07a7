//! Where things are drawn: the fixed layout tests read the rendered picture with, and the time scale.

use chrono::{DateTime, Utc};

/// Where things are drawn, for tests that read the rendered picture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The picture's width.
    pub width: u32,
    /// The x of the chart's left edge (node names to its left).
    pub chart_left: u32,
    /// The x of the chart's right edge.
    pub chart_right: u32,
    /// The y where the chart starts: above it only the title and the legend (which show every colour), below it the
    /// holds, the axis, the bands and the rows.
    pub chart_top: u32,
    /// The y of the first row.
    pub top: u32,
    /// A row's height.
    pub row_height: u32,
    /// From one row to the next (the height and the gap).
    pub row_pitch: u32,
    /// The x where each drawn row's marker starts.
    pub marker_x: u32,
    /// The marker's width.
    pub marker_width: u32,
    /// The marker's colour: a square at the left of every drawn row (a node, a group of nodes, the restore walk), in
    /// no other use.
    pub marker_colour: &'static str,
}

/// The layout of every picture.
pub const LAYOUT: Layout = Layout {
    width: 1200,
    chart_left: 240,
    chart_right: 1180,
    chart_top: 50,
    top: 92,
    row_height: 12,
    row_pitch: 16,
    marker_x: 2,
    marker_width: 6,
    marker_colour: "#5A2D82",
};

/// The characters of a row's label that fit left of the chart.
pub const LABEL_CHARS: usize = 34;

/// Maps times to x.
pub struct Scale {
    /// The time at the chart's left edge.
    pub start: DateTime<Utc>,
    /// The seconds across the chart.
    pub seconds: f64,
}

impl Scale {
    /// The x of `t`, kept within the chart.
    pub fn x(&self, t: DateTime<Utc>) -> f64 {
        let span = f64::from(LAYOUT.chart_right - LAYOUT.chart_left);
        let offset = (t - self.start).num_milliseconds() as f64 / 1000.0;
        f64::from(LAYOUT.chart_left) + (offset / self.seconds).clamp(0.0, 1.0) * span
    }

    /// The width from `from` to `to`, at least a pixel.
    pub fn width(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> f64 {
        (self.x(to) - self.x(from)).max(1.0)
    }
}
