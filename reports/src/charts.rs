//! The report's charts: SVG drawn with plotters' `SVGBackend` into strings
//! and made responsive (`width="100%"`, the height following the
//! `viewBox`), so they scale with the page and need nothing from the
//! network. Each is drawn twice, for wide screens and for phones (class
//! `wide` or `narrow`; the report's style sheet shows one), so that its text
//! stays legible at 420 px.
//!
//! * [`stacked_bars`]: one horizontal stacked bar per row (the step-time
//!   breakdown per rank).
//! * [`gantt`]: bars on a time axis in labelled rows (the representative
//!   step of every rank).
//! * [`line_chart`]: lines with markers, optional dashes and error bars, on
//!   linear or log₂ x axes (scaling, bucket-cap sweeps).
//!
//! Row and tick labels that plotters would place at "nice" numbers are
//! drawn by hand at the rows' and data points' own positions. Legends are
//! HTML ([`legend`]), so they wrap on narrow screens.

use std::error::Error as StdError;
use std::fmt;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::html::{escape, Html};

/// A colour of a chart series.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    /// `#rrggbb`.
    pub fn hex(self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }

    fn color(self) -> RGBColor {
        RGBColor(self.0, self.1, self.2)
    }
}

/// The colours of the report, one per kind of time, used by charts and
/// legends alike.
pub mod palette {
    use super::Rgb;
    /// Forward pass.
    pub const FORWARD: Rgb = Rgb(0x4e, 0x79, 0xa7);
    /// Backward compute.
    pub const BACKWARD: Rgb = Rgb(0x59, 0xa1, 0x4f);
    /// Exposed communication.
    pub const EXPOSED: Rgb = Rgb(0xe1, 0x57, 0x59);
    /// Communication overlapped with compute.
    pub const OVERLAPPED: Rgb = Rgb(0xf2, 0x8e, 0x2b);
    /// Optimizer step.
    pub const OPTIMIZER: Rgb = Rgb(0xb0, 0x7a, 0xa1);
    /// Data wait.
    pub const DATA: Rgb = Rgb(0xed, 0xc9, 0x48);
    /// Everything else.
    pub const OTHER: Rgb = Rgb(0xba, 0xb0, 0xac);
    /// A bucket's gradient-ready window.
    pub const READY: Rgb = Rgb(0x76, 0xb7, 0xb2);
    /// Writeback of reduced gradients.
    pub const WRITEBACK: Rgb = Rgb(0x9c, 0x75, 0x5f);
    /// A measured series.
    pub const MEASURED: Rgb = Rgb(0x1f, 0x4e, 0x79);
    /// A predicted or ideal series.
    pub const PREDICTED: Rgb = Rgb(0xd3, 0x7a, 0x1f);
    /// A third series.
    pub const THIRD: Rgb = Rgb(0x59, 0xa1, 0x4f);
    /// A span that never ended (hang, crash, cut trace), drawn to the end of the recording.
    pub const UNFINISHED: Rgb = Rgb(0xc4, 0x3c, 0xc4);
    /// A step that never ended (lighter, so that its open phase shows on it).
    pub const UNFINISHED_STEP: Rgb = Rgb(0xec, 0xc4, 0xec);
}

/// A chart could not be drawn (plotters reported an error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartError(pub String);

impl fmt::Display for ChartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the chart could not be drawn: {}", self.0)
    }
}

impl StdError for ChartError {}

type Draw<T> = Result<T, Box<dyn StdError>>;

/// How a chart is drawn for one range of screen widths. Every chart is drawn twice, [`WIDE`]
/// and [`NARROW`], and the report's style sheet shows one of them (by the SVG's class): a
/// drawing scaled down from 960 to a phone's 400 px would leave its 15 px text at 6 px, while
/// the narrow one keeps it at about 14.
#[derive(Clone, Copy, Debug)]
struct Layout {
    /// Width of the drawing (px) of bar and Gantt charts.
    width: u32,
    /// Width of line charts (they often sit two side by side on wide screens).
    line_width: u32,
    /// Most x-axis labels.
    x_labels: usize,
    /// Most characters of a row label.
    label_chars: usize,
    /// The SVG's class.
    class: &'static str,
}

/// Screens wider than 640 px.
const WIDE: Layout = Layout {
    width: 960,
    line_width: 640,
    x_labels: 10,
    label_chars: 28,
    class: "wide",
};

/// Screens up to 640 px (phones).
const NARROW: Layout = Layout {
    width: 400,
    line_width: 400,
    x_labels: 4,
    label_chars: 14,
    class: "narrow",
};

/// The chart drawn by `draw` at both layouts, wide first.
fn at_both_widths(
    draw: impl Fn(Layout) -> Result<String, ChartError>,
) -> Result<String, ChartError> {
    Ok(draw(WIDE)? + &draw(NARROW)?)
}
const FONT: &str = "sans-serif";
const LABEL_PX: u32 = 15;
const TEXT: RGBColor = RGBColor(0x22, 0x22, 0x22);
const GRID: RGBColor = RGBColor(0xe4, 0xe4, 0xe4);

/// One row of [`stacked_bars`]: a label and one value per series.
#[derive(Clone, Debug, PartialEq)]
pub struct BarRow {
    /// Shown left of the bar.
    pub label: String,
    /// One value per series, in series order (negative values count as 0).
    pub values: Vec<f64>,
}

/// Horizontal stacked bars, one per row, top to bottom; `colors` gives one
/// colour per series. `x_desc` names the x axis (its unit included).
pub fn stacked_bars(
    aria: &str,
    rows: &[BarRow],
    colors: &[Rgb],
    x_desc: &str,
) -> Result<String, ChartError> {
    at_both_widths(|l| stacked_bars_at(l, aria, rows, colors, x_desc))
}

fn stacked_bars_at(
    l: Layout,
    aria: &str,
    rows: &[BarRow],
    colors: &[Rgb],
    x_desc: &str,
) -> Result<String, ChartError> {
    let n = rows.len().max(1);
    let row_px = if n > 32 { 14 } else { 24 };
    let height = 30 + row_px * n as u32 + 60;
    let label_w = label_width(rows.iter().map(|r| r.label.as_str()), l.label_chars);
    let xmax = rows
        .iter()
        .map(|r| r.values.iter().map(|v| v.max(0.0)).sum::<f64>())
        .fold(0.0, f64::max);
    let xmax = if xmax > 0.0 { xmax * 1.04 } else { 1.0 };
    let mut svg = String::new();
    draw_into(&mut svg, l.width, height, |root| {
        let mut chart = row_chart(root, 14, xmax, n, label_w, l.x_labels.min(8), x_desc)?;
        let mut rects = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            let y1 = (n - i) as f64 - 0.14;
            let y0 = (n - i - 1) as f64 + 0.14;
            let mut x = 0.0;
            for (k, v) in row.values.iter().enumerate() {
                let v = v.max(0.0);
                if v > 0.0 {
                    let c = colors.get(k).copied().unwrap_or(palette::OTHER);
                    rects.push(Rectangle::new([(x, y0), (x + v, y1)], c.color().filled()));
                }
                x += v;
            }
        }
        chart.draw_series(rects)?;
        for (i, row) in rows.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(0.0, (n - i) as f64 - 0.5));
            row_label(root, &row.label, l.label_chars, px - 8, py)?;
        }
        Ok(())
    })?;
    Ok(responsive(&svg, aria, l.class))
}

/// One bar of a [`gantt`] chart.
#[derive(Clone, Debug, PartialEq)]
pub struct GanttBar {
    /// Row index (0 at the top).
    pub row: usize,
    /// Start on the time axis.
    pub start: f64,
    /// End on the time axis.
    pub end: f64,
    /// Fill colour.
    pub color: Rgb,
    /// The vertical part of the row it fills, as fractions from the row's
    /// top: `(0.1, 0.9)` for a full bar, `(0.1, 0.5)` for the upper half.
    pub band: (f64, f64),
}

/// Bars on a time axis `[0, t_max]` in rows labelled `rows` (top to
/// bottom); a thin line is drawn above every row whose index is in
/// `separators`, and rows of odd `shade_groups` index are shaded, to tell
/// ranks apart.
pub fn gantt(
    aria: &str,
    rows: &[String],
    shade: &[bool],
    separators: &[usize],
    bars: &[GanttBar],
    t_max: f64,
    x_desc: &str,
) -> Result<String, ChartError> {
    at_both_widths(|l| gantt_at(l, aria, rows, shade, separators, bars, t_max, x_desc))
}

#[allow(clippy::too_many_arguments)]
fn gantt_at(
    l: Layout,
    aria: &str,
    rows: &[String],
    shade: &[bool],
    separators: &[usize],
    bars: &[GanttBar],
    t_max: f64,
    x_desc: &str,
) -> Result<String, ChartError> {
    let n = rows.len().max(1);
    let row_px = if n > 48 { 12 } else { 20 };
    let height = 20 + row_px * n as u32 + 60;
    let label_w = label_width(rows.iter().map(String::as_str), l.label_chars);
    let t_max = if t_max > 0.0 && t_max.is_finite() {
        t_max
    } else {
        1.0
    };
    let mut svg = String::new();
    draw_into(&mut svg, l.width, height, |root| {
        let mut chart = row_chart(root, 10, t_max, n, label_w, l.x_labels, x_desc)?;
        let top = |row: usize| (n - row) as f64;
        let shading = RGBColor(0xf4, 0xf6, 0xf8);
        chart.draw_series(shade.iter().enumerate().filter(|(_, s)| **s).map(|(i, _)| {
            Rectangle::new([(0.0, top(i) - 1.0), (t_max, top(i))], shading.filled())
        }))?;
        chart.draw_series(separators.iter().filter(|&&r| r > 0 && r < n).map(|&r| {
            PathElement::new(
                vec![(0.0, top(r)), (t_max, top(r))],
                RGBColor(0xb8, 0xb8, 0xb8).stroke_width(1),
            )
        }))?;
        chart.draw_series(bars.iter().filter(|b| b.row < n).map(|b| {
            let (a, z) = b.band;
            let y1 = top(b.row) - a.clamp(0.0, 1.0);
            let y0 = top(b.row) - z.clamp(0.0, 1.0);
            let x0 = b.start.clamp(0.0, t_max);
            // Zero-length bars stay visible as a hairline.
            let x1 = b.end.clamp(x0, t_max).max(x0 + t_max * 0.0008);
            Rectangle::new([(x0, y0), (x1, y1)], b.color.color().filled())
        }))?;
        for (i, label) in rows.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(0.0, top(i) - 0.5));
            row_label(root, label, l.label_chars, px - 8, py)?;
        }
        Ok(())
    })?;
    Ok(responsive(&svg, aria, l.class))
}

/// One series of a [`line_chart`].
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// Series name (for the legend, which the caller writes).
    pub name: String,
    /// Colour.
    pub color: Rgb,
    /// Points in x order.
    pub points: Vec<(f64, f64)>,
    /// Dashed instead of solid.
    pub dashed: bool,
    /// Draw a marker at each point.
    pub markers: bool,
    /// Vertical error bars: `(x, low, high)`, marked at the series' point of
    /// the same `x`.
    pub errors: Vec<(f64, f64, f64)>,
}

impl Line {
    /// A solid line with markers and no error bars.
    pub fn new(name: impl Into<String>, color: Rgb, points: Vec<(f64, f64)>) -> Line {
        Line {
            name: name.into(),
            color,
            points,
            dashed: false,
            markers: true,
            errors: Vec::new(),
        }
    }
}

/// An axis of a [`line_chart`].
#[derive(Clone, Debug)]
pub struct Axis {
    /// Axis title, with its unit.
    pub desc: String,
    /// Smallest and largest value shown.
    pub range: (f64, f64),
    /// Logarithmic (base 2) instead of linear; only for the x axis.
    pub log2: bool,
    /// Label exactly these values (x axis only); otherwise plotters picks.
    pub ticks: Option<Vec<f64>>,
    /// Formats a value for a label.
    pub format: fn(f64) -> String,
}

/// Lines on x/y axes. On a log₂ x axis the values must be positive.
pub fn line_chart(aria: &str, lines: &[Line], x: &Axis, y: &Axis) -> Result<String, ChartError> {
    at_both_widths(|l| line_chart_at(l, aria, lines, x, y))
}

fn line_chart_at(
    l: Layout,
    aria: &str,
    lines: &[Line],
    x: &Axis,
    y: &Axis,
) -> Result<String, ChartError> {
    let narrow = l.line_width < WIDE.line_width;
    let tx = |v: f64| {
        if x.log2 {
            v.max(f64::MIN_POSITIVE).log2()
        } else {
            v
        }
    };
    let (mut x0, mut x1) = (tx(x.range.0), tx(x.range.1));
    if x0.is_nan() || x1.is_nan() || x1 <= x0 {
        x0 -= 0.5;
        x1 += 0.5;
    }
    let pad = (x1 - x0) * 0.06;
    let (x0, x1) = (x0 - pad, x1 + pad);
    let (mut y0, mut y1) = y.range;
    if y0.is_nan() || y1.is_nan() || y1 <= y0 {
        y0 -= 1.0;
        y1 += 1.0;
    }
    let height = 420;
    let mut svg = String::new();
    draw_into(&mut svg, l.line_width, height, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin_top(16)
            .margin_right(if narrow { 16 } else { 28 })
            .margin_left(8)
            .x_label_area_size(62)
            .y_label_area_size(if narrow { 76 } else { 90 })
            .build_cartesian_2d(x0..x1, y0..y1)?;
        let xfmt = |v: &f64| (x.format)(if x.log2 { v.exp2() } else { *v });
        let yfmt = |v: &f64| (y.format)(*v);
        let manual_ticks = x.ticks.as_ref().filter(|t| !t.is_empty());
        chart
            .configure_mesh()
            .x_labels(if manual_ticks.is_some() {
                0
            } else {
                l.x_labels.min(8)
            })
            .y_labels(if narrow { 5 } else { 7 })
            .x_label_formatter(&xfmt)
            .y_label_formatter(&yfmt)
            .x_desc(x.desc.as_str())
            .y_desc(y.desc.as_str())
            .label_style((FONT, LABEL_PX).into_font().color(&TEXT))
            .axis_desc_style((FONT, LABEL_PX).into_font().color(&TEXT))
            .light_line_style(GRID)
            .max_light_lines(2)
            .bold_line_style(GRID)
            .draw()?;
        if let Some(ticks) = manual_ticks {
            let style = (FONT, LABEL_PX)
                .into_font()
                .color(&TEXT)
                .pos(Pos::new(HPos::Center, VPos::Top));
            for &t in ticks {
                let v = tx(t);
                if !(v >= x0 && v <= x1) {
                    continue;
                }
                chart.draw_series(std::iter::once(PathElement::new(
                    vec![(v, y0), (v, y1)],
                    GRID.stroke_width(1),
                )))?;
                let (px, py) = chart.backend_coord(&(v, y0));
                root.draw(&PathElement::new(
                    vec![(px, py), (px, py + 5)],
                    TEXT.stroke_width(1),
                ))?;
                root.draw(&Text::new((x.format)(t), (px, py + 8), style.clone()))?;
            }
        }
        for l in lines {
            let c = l.color.color();
            let pts: Vec<(f64, f64)> = l
                .points
                .iter()
                .filter(|p| p.0.is_finite() && p.1.is_finite())
                .map(|&(a, b)| (tx(a), b))
                .collect();
            if l.dashed {
                chart.draw_series(DashedLineSeries::new(pts.clone(), 8, 6, c.stroke_width(2)))?;
            } else {
                chart.draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))?;
            }
            for &(ex, lo, hi) in &l.errors {
                if ex.is_finite() && lo.is_finite() && hi.is_finite() {
                    // The bar's marker sits on the series' own point.
                    let mid = l
                        .points
                        .iter()
                        .find(|p| p.0 == ex && p.1.is_finite())
                        .map_or((lo + hi) / 2.0, |p| p.1);
                    chart.draw_series(std::iter::once(ErrorBar::new_vertical(
                        tx(ex),
                        lo,
                        mid,
                        hi,
                        c.stroke_width(2),
                        10,
                    )))?;
                }
            }
            if l.markers {
                chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, c.filled())))?;
            }
        }
        Ok(())
    })?;
    Ok(responsive(&svg, aria, l.class))
}

/// An HTML legend: one coloured swatch and name per entry; `dashed` entries
/// get a dashed swatch.
pub fn legend(entries: &[(&str, Rgb, bool)]) -> String {
    let mut h = Html::new();
    h.open("ul", &[("class", "legend")]);
    for (name, color, dashed) in entries {
        let class = if *dashed { "sw dashed" } else { "sw" };
        let style = if *dashed {
            format!("border-color:{}", color.hex())
        } else {
            format!("background:{}", color.hex())
        };
        h.open("li", &[])
            .open("span", &[("class", class), ("style", &style)])
            .close("span")
            .text(name)
            .close("li");
    }
    h.close("ul");
    h.finish()
}

/// Runs `f` on a white drawing area `width × height` writing SVG into `svg`.
fn draw_into(
    svg: &mut String,
    width: u32,
    height: u32,
    f: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Draw<()>,
) -> Result<(), ChartError> {
    let root = SVGBackend::with_string(svg, (width, height)).into_drawing_area();
    let result = root
        .fill(&WHITE)
        .map_err(|e| Box::new(e) as Box<dyn StdError>)
        .and_then(|()| f(&root))
        .and_then(|()| root.present().map_err(|e| Box::new(e) as Box<dyn StdError>));
    drop(root);
    result.map_err(|e| ChartError(e.to_string()))
}

/// A row label right-aligned at `(x, y)` (pixels), cut to `chars` characters.
fn row_label(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    label: &str,
    chars: usize,
    x: i32,
    y: i32,
) -> Draw<()> {
    let style = (FONT, LABEL_PX)
        .into_font()
        .color(&TEXT)
        .pos(Pos::new(HPos::Right, VPos::Center));
    let text: String = if label.chars().count() > chars {
        label.chars().take(chars - 1).chain(['…']).collect()
    } else {
        label.to_owned()
    };
    root.draw(&Text::new(text, (x, y), style))?;
    Ok(())
}

/// Room for row labels: about 8 px per character of the longest (at most `chars`), 60–240.
fn label_width<'a>(labels: impl Iterator<Item = &'a str>, chars: usize) -> u32 {
    let longest = labels
        .map(|l| l.chars().count().min(chars))
        .max()
        .unwrap_or(4);
    (longest as u32 * 8 + 20).clamp(60, 240)
}

/// Axis labels with as many decimals as the range needs.
/// A chart of `rows` horizontal rows over `0..x_max` (bars, Gantt lanes): x axis with
/// `x_labels` labels and the description `x_desc`, no y mesh or labels (rows are labelled by
/// the caller), the report's fonts and grid.
fn row_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    margin_top: u32,
    x_max: f64,
    rows: usize,
    label_w: u32,
    x_labels: usize,
    x_desc: &str,
) -> Draw<
    ChartContext<
        'a,
        SVGBackend<'b>,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
> {
    let mut chart = ChartBuilder::on(root)
        .margin_top(margin_top)
        .margin_right(28)
        .margin_left(8)
        .x_label_area_size(54)
        .y_label_area_size(label_w)
        .build_cartesian_2d(0f64..x_max, 0f64..rows as f64)?;
    let fmt = axis_formatter(x_max);
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_labels(x_labels)
        .x_label_formatter(&fmt)
        .x_desc(x_desc)
        .label_style((FONT, LABEL_PX).into_font().color(&TEXT))
        .axis_desc_style((FONT, LABEL_PX).into_font().color(&TEXT))
        .light_line_style(GRID)
        .max_light_lines(2)
        .bold_line_style(GRID)
        .draw()?;
    Ok(chart)
}

fn axis_formatter(max: f64) -> impl Fn(&f64) -> String {
    let decimals = if max >= 20.0 {
        0
    } else if max >= 2.0 {
        1
    } else if max >= 0.2 {
        2
    } else {
        3
    };
    move |v: &f64| format!("{v:.decimals$}")
}

/// The SVG with `width="100%"` and no fixed height (the `viewBox` keeps the
/// aspect ratio), an accessible name, the layout's class, and no XML declaration.
fn responsive(svg: &str, aria: &str, class: &str) -> String {
    let body = svg.trim();
    let Some(open_end) = body.find('>') else {
        return body.to_owned();
    };
    let open = &body[..open_end];
    let view_box = attr(open, "viewBox").unwrap_or("0 0 960 400");
    let mut out = String::with_capacity(body.len() + 160);
    out.push_str("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"");
    out.push_str(class);
    out.push_str("\" width=\"100%\" viewBox=\"");
    out.push_str(&escape(view_box));
    out.push_str("\" preserveAspectRatio=\"xMidYMin meet\" role=\"img\" aria-label=\"");
    out.push_str(&escape(aria));
    out.push('"');
    out.push_str(&body[open_end..]);
    out
}

/// The value of attribute `name` in an opening tag.
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let i = tag.find(&key)? + key.len();
    let rest = &tag[i..];
    Some(&rest[..rest.find('"')?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_are_responsive_svg_with_labels() {
        let svg = stacked_bars(
            "breakdown",
            &[
                BarRow {
                    label: "rank 0".into(),
                    values: vec![1.0, 2.0],
                },
                BarRow {
                    label: "rank <1>".into(),
                    values: vec![1.5, -1.0],
                },
            ],
            &[palette::FORWARD, palette::BACKWARD],
            "time per step (ms)",
        )
        .unwrap();
        // Drawn twice: 960 px wide for wide screens, then 400 px for phones.
        assert!(
            svg.starts_with(
                "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"wide\" width=\"100%\" \
                 viewBox=\"0 0 960 "
            ),
            "{}",
            &svg[..200]
        );
        let narrow = svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"narrow\"");
        assert!(
            narrow.is_some_and(|i| svg[i..].contains("viewBox=\"0 0 400 ")),
            "{svg}"
        );
        assert!(!svg.contains("height=\"") || !svg[..svg.find('>').unwrap()].contains("height="));
        assert!(svg.contains("time per step (ms)"));
        assert!(svg.contains("rank &lt;1&gt;"));
        assert!(
            svg.contains("#4e79a7") || svg.contains("rgb(78,121,167)") || svg.contains("#4E79A7")
        );
    }

    #[test]
    fn gantt_and_lines_draw_with_empty_or_odd_input() {
        let g = gantt("step", &[], &[], &[], &[], 0.0, "ms").unwrap();
        assert!(g.contains("<svg"));
        let l = line_chart(
            "x",
            &[Line::new(
                "a",
                palette::MEASURED,
                vec![(1.0, f64::NAN), (2.0, 3.0)],
            )],
            &Axis {
                desc: "world size".into(),
                range: (1.0, 1.0),
                log2: true,
                ticks: Some(vec![1.0, 2.0]),
                format: |v| format!("{v}"),
            },
            &Axis {
                desc: "throughput".into(),
                range: (0.0, 0.0),
                log2: false,
                ticks: None,
                format: |v| format!("{v}"),
            },
        )
        .unwrap();
        assert!(l.contains("world size") && l.contains("throughput"));
    }

    #[test]
    fn legend_escapes_names() {
        let l = legend(&[
            ("<b>", palette::DATA, false),
            ("ideal", palette::PREDICTED, true),
        ]);
        assert!(l.contains("&lt;b&gt;"));
        assert!(l.contains("sw dashed"));
    }
}
