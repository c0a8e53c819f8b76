//! Figures: a small chart model ([`Figure`]) drawn with plotters into SVG (inlined in the
//! report) and PNG.
//!
//! Text is laid out with an embedded DejaVu Sans font (plotters' `ab_glyph` feature), so
//! neither backend needs fontconfig or freetype; the font's license is in
//! `assets/DejaVuSans-LICENSE.txt`.

use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::FontStyle;

const FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
const FAMILY: &str = "sans-serif";

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The font is embedded and known to parse; a failure would only lose text.
        let _ = plotters::style::register_font(FAMILY, FontStyle::Normal, FONT);
    });
}

/// Colours of series, in order (colour-blind-safe Okabe-Ito palette).
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(240, 228, 66),
];

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeriesKind {
    Line,
    /// A step function (CDFs).
    Step,
    Points,
    /// Crosses (marked events such as losses).
    Crosses,
}

/// One series: points, and an optional shaded band `(x, low, high)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub band: Vec<(f64, f64, f64)>,
    pub kind: SeriesKind,
    /// Palette index.
    pub color: usize,
}

impl Series {
    pub fn line(name: impl Into<String>, points: Vec<(f64, f64)>, color: usize) -> Self {
        Series {
            name: name.into(),
            points,
            band: Vec::new(),
            kind: SeriesKind::Line,
            color,
        }
    }

    pub fn with_kind(mut self, kind: SeriesKind) -> Self {
        self.kind = kind;
        self
    }

    pub fn with_band(mut self, band: Vec<(f64, f64, f64)>) -> Self {
        self.band = band;
        self
    }
}

/// A vertical or horizontal reference line with a label.
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    pub at: f64,
    pub label: String,
    pub color: usize,
}

/// Where a chart's legend sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Legend {
    #[default]
    UpperLeft,
    /// For series that stay high (shares near 1).
    LowerLeft,
    /// For CDFs that rise early (the lower right stays empty).
    LowerRight,
}

/// An x/y chart.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    pub vlines: Vec<Marker>,
    pub hlines: Vec<Marker>,
    pub x_range: Option<(f64, f64)>,
    pub y_range: Option<(f64, f64)>,
    pub legend: Legend,
}

/// A grid of values with row and column labels.
#[derive(Debug, Clone, PartialEq)]
pub struct Heatmap {
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<String>,
    /// `values[row][column]`.
    pub values: Vec<Vec<Option<f64>>>,
    /// Colour scale limits.
    pub range: (f64, f64),
    /// How a cell's value is printed.
    pub percent: bool,
}

/// Something the report shows.
#[derive(Debug, Clone, PartialEq)]
pub enum Figure {
    Chart(Chart),
    /// Charts stacked vertically, sharing nothing but the title.
    Panels {
        title: String,
        charts: Vec<Chart>,
    },
    Heatmap(Heatmap),
}

impl Figure {
    /// Pixel size the figure is drawn at.
    pub fn size(&self) -> (u32, u32) {
        match self {
            Figure::Chart(_) => (760, 440),
            Figure::Panels { charts, .. } => (760, 40 + 250 * charts.len() as u32),
            Figure::Heatmap(h) => (760, 110 + 36 * h.rows.len().max(1) as u32),
        }
    }
}

/// The figure as an SVG document (no XML declaration, ready to inline in HTML).
pub fn render_svg(fig: &Figure) -> Result<String, String> {
    register_font();
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, fig.size()).into_drawing_area();
        draw(&root, fig).map_err(|e| format!("drawing SVG: {e}"))?;
        root.present().map_err(|e| format!("drawing SVG: {e}"))?;
    }
    Ok(out)
}

/// Writes the figure as a PNG file (through a temporary file and a rename; the temporary
/// name is cut where the file's own name leaves no room for its suffix).
pub fn render_png(fig: &Figure, path: &Path) -> Result<(), String> {
    register_font();
    let suffix = format!(".{}.tmp.png", std::process::id());
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let room = crate::plan::MAX_FILE_NAME.saturating_sub(suffix.len());
    let tmp = path.with_file_name(format!("{}{suffix}", crate::plan::fit_name(&stem, room)));
    {
        let root = BitMapBackend::new(&tmp, fig.size()).into_drawing_area();
        draw(&root, fig).map_err(|e| format!("drawing PNG: {e}"))?;
        root.present()
            .map_err(|e| format!("writing {}: {e}", tmp.display()))?;
    }
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, fig: &Figure) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    match fig {
        Figure::Chart(c) => draw_chart(root, c),
        Figure::Panels { title, charts } => {
            let area = root.titled(title, (FAMILY, 18))?;
            let panels = area.split_evenly((charts.len().max(1), 1));
            for (panel, chart) in panels.iter().zip(charts) {
                draw_chart(panel, chart)?;
            }
            Ok(())
        }
        Figure::Heatmap(h) => draw_heatmap(root, h),
    }
}

/// Data range of a chart with 4 % padding; `(0, 1)` when empty.
fn bounds(c: &Chart) -> ((f64, f64), (f64, f64)) {
    let mut xs: Vec<f64> = Vec::new();
    let mut ys: Vec<f64> = Vec::new();
    for s in &c.series {
        for (x, y) in &s.points {
            xs.push(*x);
            ys.push(*y);
        }
        for (x, lo, hi) in &s.band {
            xs.push(*x);
            ys.push(*lo);
            ys.push(*hi);
        }
    }
    xs.extend(c.vlines.iter().map(|m| m.at));
    ys.extend(c.hlines.iter().map(|m| m.at));
    let range = |v: &[f64], include_zero: bool| {
        let v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return (0.0, 1.0);
        }
        let mut lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let mut hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if include_zero && lo > 0.0 {
            lo = 0.0;
        }
        if hi - lo < 1e-12 {
            hi = lo + 1.0;
        }
        let pad = (hi - lo) * 0.04;
        (if lo == 0.0 { 0.0 } else { lo - pad }, hi + pad)
    };
    (
        c.x_range.unwrap_or_else(|| range(&xs, true)),
        c.y_range.unwrap_or_else(|| range(&ys, true)),
    )
}

fn draw_chart<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, c: &Chart) -> DrawResult<DB> {
    let ((x0, x1), (y0, y1)) = bounds(c);
    let mut chart = ChartBuilder::on(area)
        .caption(&c.title, (FAMILY, 16))
        .margin(12)
        .x_label_area_size(38)
        .y_label_area_size(62)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    chart
        .configure_mesh()
        .x_desc(c.x_label.as_str())
        .y_desc(c.y_label.as_str())
        .label_style((FAMILY, 12))
        .axis_desc_style((FAMILY, 13))
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(215, 215, 215))
        .draw()?;
    for s in &c.series {
        let col = color(s.color);
        if s.band.len() >= 2 {
            let mut poly: Vec<(f64, f64)> = s.band.iter().map(|(x, _, hi)| (*x, *hi)).collect();
            poly.extend(s.band.iter().rev().map(|(x, lo, _)| (*x, *lo)));
            chart.draw_series(std::iter::once(Polygon::new(poly, col.mix(0.18).filled())))?;
        }
        let legend_style = col.stroke_width(2);
        let drawn = match s.kind {
            SeriesKind::Line => chart.draw_series(LineSeries::new(
                s.points.iter().copied(),
                col.stroke_width(2),
            ))?,
            SeriesKind::Step => {
                let mut pts = Vec::with_capacity(s.points.len() * 2 + 1);
                let mut prev_y = 0.0;
                for (x, y) in &s.points {
                    pts.push((*x, prev_y));
                    pts.push((*x, *y));
                    prev_y = *y;
                }
                chart.draw_series(LineSeries::new(pts, col.stroke_width(2)))?
            }
            SeriesKind::Points => {
                chart.draw_series(s.points.iter().map(|p| Circle::new(*p, 3, col.filled())))?
            }
            SeriesKind::Crosses => chart.draw_series(
                s.points
                    .iter()
                    .map(|p| Cross::new(*p, 4, col.stroke_width(2))),
            )?,
        };
        if !s.name.is_empty() {
            drawn
                .label(s.name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], legend_style));
        }
    }
    for (i, m) in c.vlines.iter().enumerate() {
        let col = color(m.color);
        // Stagger the labels so that close markers stay readable.
        let label_y = y1 - (y1 - y0) * (0.02 + 0.08 * (i % 4) as f64);
        chart.draw_series(DashedLineSeries::new(
            vec![(m.at, y0), (m.at, y1)],
            6,
            4,
            col.stroke_width(2),
        ))?;
        chart.draw_series(std::iter::once(Text::new(
            format!(" {}", m.label),
            (m.at, label_y),
            TextStyle::from((FAMILY, 12).into_font()).color(&col),
        )))?;
    }
    for m in &c.hlines {
        let col = color(m.color);
        chart.draw_series(DashedLineSeries::new(
            vec![(x0, m.at), (x1, m.at)],
            6,
            4,
            col.stroke_width(2),
        ))?;
        chart.draw_series(std::iter::once(Text::new(
            m.label.clone(),
            (x0 + (x1 - x0) * 0.01, m.at),
            TextStyle::from((FAMILY, 12).into_font()).color(&col),
        )))?;
    }
    if c.series.iter().any(|s| !s.name.is_empty()) {
        chart
            .configure_series_labels()
            .label_font((FAMILY, 12))
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(180, 180, 180))
            .position(match c.legend {
                Legend::UpperLeft => SeriesLabelPosition::UpperLeft,
                Legend::LowerLeft => SeriesLabelPosition::LowerLeft,
                Legend::LowerRight => SeriesLabelPosition::LowerRight,
            })
            .draw()?;
    }
    Ok(())
}

/// Blue (low) to orange (high).
fn heat_color(v: f64, (lo, hi): (f64, f64)) -> RGBColor {
    let t = if hi > lo {
        ((v - lo) / (hi - lo)).clamp(0.0, 1.0)
    } else {
        0.5
    };
    let a = (222.0, 235.0, 247.0);
    let b = (8.0, 81.0, 156.0);
    let mix = |p: f64, q: f64| (p + (q - p) * t).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

fn draw_heatmap<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, h: &Heatmap) -> DrawResult<DB> {
    let ncol = h.columns.len().max(1);
    let nrow = h.rows.len().max(1);
    let mut chart = ChartBuilder::on(area)
        .caption(&h.title, (FAMILY, 16))
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(230)
        // An integer range is inclusive as a segmented axis: 0..n-1 gives n cells.
        .build_cartesian_2d(
            (0..ncol - 1).into_segmented(),
            (0..nrow - 1).into_segmented(),
        )?;
    let columns = h.columns.clone();
    let rows = h.rows.clone();
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(ncol)
        .y_labels(nrow)
        .label_style((FAMILY, 12))
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => columns.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => rows
                .get(nrow - 1 - (*i).min(nrow - 1))
                .cloned()
                .unwrap_or_default(),
            _ => String::new(),
        })
        .draw()?;
    for (r, row) in h.values.iter().enumerate() {
        let y = nrow - 1 - r;
        for (c, v) in row.iter().enumerate() {
            let fill = match v {
                Some(v) => heat_color(*v, h.range),
                None => RGBColor(245, 245, 245),
            };
            chart.draw_series(std::iter::once(Rectangle::new(
                [
                    (SegmentValue::Exact(c), SegmentValue::Exact(y)),
                    (SegmentValue::Exact(c + 1), SegmentValue::Exact(y + 1)),
                ],
                fill.filled(),
            )))?;
            let text = match v {
                Some(v) if h.percent => format!("{:.0}%", v * 100.0),
                Some(v) => format!("{v:.2}"),
                None => "-".into(),
            };
            let dark = v.is_some_and(|v| {
                let (lo, hi) = h.range;
                hi > lo && (v - lo) / (hi - lo) > 0.55
            });
            let style = TextStyle::from((FAMILY, 13).into_font())
                .color(if dark { &WHITE } else { &BLACK })
                .pos(plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Center,
                    plotters::style::text_anchor::VPos::Center,
                ));
            chart.draw_series(std::iter::once(Text::new(
                text,
                (SegmentValue::CenterOf(c), SegmentValue::CenterOf(y)),
                style,
            )))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_chart() -> Figure {
        Figure::Chart(Chart {
            title: "time to deliver".into(),
            x_label: "MB".into(),
            y_label: "s".into(),
            series: vec![
                Series::line("classic", vec![(0.0, 0.0), (100.0, 10.0), (200.0, 18.0)], 0)
                    .with_band(vec![
                        (0.0, 0.0, 0.0),
                        (100.0, 9.0, 11.0),
                        (200.0, 17.0, 19.0),
                    ]),
                Series::line("cdf", vec![(1.0, 0.5), (2.0, 1.0)], 1).with_kind(SeriesKind::Step),
                Series::line("", vec![(50.0, 5.0)], 2).with_kind(SeriesKind::Crosses),
            ],
            vlines: vec![Marker {
                at: 120.0,
                label: "exit".into(),
                color: 3,
            }],
            ..Chart::default()
        })
    }

    #[test]
    fn svg_has_the_title_and_series() {
        let svg = render_svg(&sample_chart()).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..40]);
        assert!(svg.contains("time to deliver") && svg.contains("classic"));
        assert!(svg.contains("exit"));
    }

    #[test]
    fn png_and_heatmap_render() {
        let dir = std::env::temp_dir().join(format!("satquic-lab-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let heat = Figure::Heatmap(Heatmap {
            title: "efficiency".into(),
            columns: vec!["TERR".into(), "SAT".into()],
            rows: vec!["cubic".into(), "bbr".into()],
            values: vec![vec![Some(0.9), Some(0.2)], vec![None, Some(0.5)]],
            range: (0.0, 1.0),
            percent: true,
        });
        let svg = render_svg(&heat).unwrap();
        assert!(svg.contains("90%") && svg.contains("bbr"));
        let empty = Figure::Panels {
            title: "panels".into(),
            charts: vec![Chart::default(), Chart::default()],
        };
        for (i, fig) in [sample_chart(), heat, empty].iter().enumerate() {
            let path = dir.join(format!("f{i}.png"));
            render_png(fig, &path).unwrap();
            let bytes = std::fs::read(&path).unwrap();
            assert_eq!(&bytes[1..4], b"PNG");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
