//! The nightly simulation's pictures, as SVG: a value per night for a few curves (staleness of the
//! realized fetches beside the evenly spaced optimum and the plan's rates fetched as Poisson; with
//! --learn, the cost of the learned plan beside the oracle's).

use std::path::Path;

use anyhow::{anyhow, Result};
use plotters::prelude::*;

/// Picture size in pixels.
const SIZE: (u32, u32) = (900, 540);

/// One curve: its name, colour and value per night (from night 1).
pub struct Curve<'a> {
    pub name: &'a str,
    pub colour: RGBColor,
    pub values: &'a [f64],
}

/// What a plot shows: its caption and the y axis's description.
pub struct Axes<'a> {
    pub caption: &'a str,
    pub y: &'a str,
}

/// The staleness plot's axes.
pub const STALENESS: Axes<'static> = Axes {
    caption: "staleness per night",
    y: "importance-weighted share of time stale",
};

/// Writes the plot of `curves` (a value per night) to `path`.
pub fn write_nights_svg(path: &Path, axes: &Axes, curves: &[Curve]) -> Result<()> {
    let fail = |e: &dyn std::fmt::Debug| anyhow!("drawing {}: {e:?}", path.display());
    let nights = curves.iter().map(|c| c.values.len()).max().unwrap_or(0);
    let values = || curves.iter().flat_map(|c| c.values.iter().copied());
    let (lo, hi) = (
        values().fold(f64::INFINITY, f64::min),
        values().fold(f64::NEG_INFINITY, f64::max),
    );
    if nights == 0 || !(lo.is_finite() && hi.is_finite()) {
        return Err(anyhow!("{}: nothing to plot", path.display()));
    }
    let pad = ((hi - lo) * 0.1).max(1e-3);
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(axes.caption, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(1f64..nights.max(2) as f64, (lo - pad).max(0.0)..(hi + pad))
        .map_err(|e| fail(&e))?;
    chart
        .configure_mesh()
        .x_desc("night")
        .y_desc(axes.y)
        .draw()
        .map_err(|e| fail(&e))?;
    for c in curves {
        let colour = c.colour;
        chart
            .draw_series(LineSeries::new(
                c.values
                    .iter()
                    .enumerate()
                    .map(|(k, &v)| (k as f64 + 1.0, v)),
                colour.stroke_width(2),
            ))
            .map_err(|e| fail(&e))?
            .label(c.name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|e| fail(&e))?;
    root.present().map_err(|e| fail(&e))?;
    Ok(())
}
