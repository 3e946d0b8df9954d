//! The suite's two SVG plots, drawn with `plotters`' SVG backend.
//!
//! `plotters` is built without its default features: those bring system font libraries
//! (font-kit, fontconfig) and bitmap encoders, which the machines that build this crate
//! need not have. Without a font feature its SVG backend measures text with a naive
//! estimate and leaves the rendering to whatever opens the file, which is all an SVG needs.
//!
//! Both plots are horizontal bars, one group per kernel: kernel names on the y axis stay
//! readable however many kernels there are, where names under vertical bars would
//! collide.

use super::{Row, Timing, Work};
use anyhow::Result;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// The bars' colours: offload, CUDA C++ (or the second size), the copy.
const COLOURS: [RGBColor; 3] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(120, 120, 120),
];

const FONT: &str = "sans-serif";

/// One bar group's bars: its label in the legend, and each kernel's value (`None`: no
/// bar for that kernel).
struct Series {
    label: String,
    values: Vec<Option<f64>>,
}

/// Draws horizontal grouped bars: `kernels` top to bottom, one bar of each series per
/// kernel, each labelled with its value (`decimals` of them); a vertical rule at
/// `rule`, if given.
#[allow(clippy::too_many_arguments)]
fn bars<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    x_desc: &str,
    kernels: &[&str],
    series: &[Series],
    decimals: usize,
    rule: Option<f64>,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let k = kernels.len();
    let top = series
        .iter()
        .flat_map(|s| s.values.iter().flatten())
        .fold(rule.unwrap_or(0.0), |a, &b| a.max(b));
    // Room right of the longest bar for its value.
    let x_max = if top > 0.0 { top * 1.2 } else { 1.0 };
    // Kernel `i` is centred at `k - 1 - i`, so the first is at the top.
    let centres: Vec<f64> = (0..k).map(|i| (k - 1 - i) as f64).collect();
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, 17))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(150)
        // One empty band above the first kernel, for the legend.
        .build_cartesian_2d(0f64..x_max, -0.5f64..k as f64 + 0.5)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_label_formatter(&|v| format!("{v:.*}", decimals.min(1)))
        .x_desc(x_desc)
        .label_style((FONT, 13))
        .draw()?;
    // The kernels' names, right-aligned left of the axis at each group's centre: drawn
    // by hand, since plotters' axis labels fall where its numeric key points do, not
    // at the kernels.
    let (base_x, base_y) = area.get_base_pixel();
    let name_style =
        TextStyle::from((FONT, 13).into_font()).pos(Pos::new(HPos::Right, VPos::Center));
    for (name, &centre) in kernels.iter().zip(&centres) {
        let (x, y) = chart.backend_coord(&(0.0, centre));
        area.draw(&Text::new(
            name.to_string(),
            (x - base_x - 8, y - base_y),
            name_style.clone(),
        ))?;
    }
    // The group fills 80% of a kernel's band; each series an equal slice of it.
    let slice = 0.8 / series.len() as f64;
    let value_style =
        TextStyle::from((FONT, 11).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    for (j, s) in series.iter().enumerate() {
        let colour = COLOURS[j % COLOURS.len()];
        let bar = |(i, v): (usize, &Option<f64>)| {
            v.map(|v| {
                let hi = centres[i] + 0.4 - j as f64 * slice;
                (v, hi - slice, hi)
            })
        };
        let placed: Vec<(f64, f64, f64)> = s.values.iter().enumerate().filter_map(bar).collect();
        chart
            .draw_series(
                placed
                    .iter()
                    .map(|&(v, lo, hi)| Rectangle::new([(0.0, lo), (v, hi)], colour.filled())),
            )?
            .label(s.label.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], colour.filled()));
        chart.draw_series(placed.iter().map(|&(v, lo, hi)| {
            Text::new(
                format!(" {v:.decimals$}"),
                (v, (lo + hi) / 2.0),
                value_style.clone(),
            )
        }))?;
    }
    if let Some(x) = rule {
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(x, -0.5), (x, k as f64 + 0.5)],
            BLACK.stroke_width(1),
        )))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font((FONT, 13))
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

/// The kernels of `rows`, each once, in the order they ran.
fn kernels<'a>(rows: impl Iterator<Item = &'a Row>) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for r in rows {
        if !names.contains(&r.kernel) {
            names.push(r.kernel);
        }
    }
    names
}

/// The size a set of rows ran at, for labels: the first row's.
fn size_label<'a>(rows: impl Iterator<Item = &'a Row>, fallback: &str) -> String {
    rows.map(|r| r.size.clone())
        .next()
        .unwrap_or_else(|| fallback.to_string())
}

/// `ratio.svg`: offload / CUDA C++ per kernel, a bar for each size.
pub(super) fn ratio(path: &Path, device: &str, rows: &[Row]) -> Result<()> {
    let names = kernels(rows.iter());
    let series = [true, false].map(|large| {
        let sized = rows.iter().filter(|r| r.large == large);
        // The 1-D kernels' sizes name the series: the grids' and GEMM's are in the table.
        let label = if large {
            format!("large ({} elements, GEMM 4096)", size_label(sized, "large"))
        } else {
            format!("1M ({} elements, GEMM 1024)", size_label(sized, "2^20"))
        };
        Series {
            label,
            values: names
                .iter()
                .map(|n| {
                    rows.iter()
                        .find(|r| r.kernel == *n && r.large == large)
                        .map(Row::ratio)
                })
                .collect(),
        }
    });
    let root =
        SVGBackend::new(path, (1000, 140 + 46 * (names.len() as u32 + 1))).into_drawing_area();
    root.fill(&WHITE)?;
    bars(
        &root,
        &format!("offload / CUDA C++ (median kernel time), {device}: below 1 is faster"),
        "offload median / CUDA C++ median",
        &names,
        &series,
        2,
        Some(1.0),
    )?;
    root.present()?;
    Ok(())
}

/// `bandwidth.svg`: each bandwidth-bound kernel's GB/s, both sides, against a
/// device-to-device copy of the same bytes; a panel for each size.
pub(super) fn bandwidth(path: &Path, device: &str, rows: &[Row]) -> Result<()> {
    let streaming = |large: bool| {
        rows.iter()
            .filter(move |r| r.large == large && matches!(r.work, Work::Bytes(_)))
    };
    let names = kernels(streaming(true).chain(streaming(false)));
    let root =
        SVGBackend::new(path, (1600, 160 + 62 * (names.len() as u32 + 1))).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((1, 2));
    for (panel, large) in panels.iter().zip([true, false]) {
        let gbs = |pick: fn(&Row) -> Option<Timing>| -> Vec<Option<f64>> {
            names
                .iter()
                .map(|n| {
                    streaming(large)
                        .find(|r| r.kernel == *n)
                        .and_then(|r| pick(r).map(|t| r.rate(t)))
                })
                .collect()
        };
        let series = [
            Series {
                label: "offload".into(),
                values: gbs(|r| Some(r.offload)),
            },
            Series {
                label: "CUDA C++".into(),
                values: gbs(|r| Some(r.cuda)),
            },
            Series {
                label: "device-to-device copy, same bytes".into(),
                values: gbs(|r| r.copy),
            },
        ];
        let size = if large {
            "large size (2^26 elements)"
        } else {
            "1M (2^20 elements)"
        };
        bars(
            panel,
            &format!("achieved bandwidth, {size}, {device}"),
            "GB/s (bytes each kernel must move / median time)",
            &names,
            &series,
            0,
            None,
        )?;
    }
    root.present()?;
    Ok(())
}
