//! The sweep's picture: cost against bandwidth per policy, polite (solid) and not (dashed), as SVG.

use std::path::Path;

use anyhow::{anyhow, Result};
use plotters::prelude::*;

use revisit_core::objective::Objective;
use revisit_core::solve::sweep::SweepPoint;

/// Picture size in pixels (two panels side by side).
const SIZE: (u32, u32) = (1280, 560);
/// The harmonic panel's axis when no point has a finite harmonic cost.
const EMPTY_HARMONIC_AXIS: (f64, f64) = (0.1, 10.0);
/// Dash and gap lengths of the non-polite curves, pixels.
const DASH: (u32, u32) = (7, 5);

/// One colour per policy, in the order of [`Objective::ALL`] (colour-blind safe: Okabe-Ito, with
/// grey and a dark purple where its yellow would vanish on white).
const COLOURS: [RGBColor; 9] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(117, 112, 179),
    RGBColor(230, 159, 0),
    RGBColor(120, 120, 120),
    RGBColor(0, 0, 0),
];
const _: () = assert!(
    COLOURS.len() == Objective::ALL.len(),
    "one colour per policy"
);

/// Writes the sweep's plot to `path`: harmonic staleness per unit of importance (left, log scale)
/// and the fresh share of time with Poisson crawls (right), against bandwidth per URL.
pub fn write_sweep_svg(path: &Path, points: &[SweepPoint], importance_total: f64) -> Result<()> {
    let fail = |e: &dyn std::fmt::Debug| anyhow!("drawing {}: {e:?}", path.display());
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let (left, right) = root.split_horizontally(SIZE.0 / 2);
    let fractions = || points.iter().map(|p| p.bandwidth_fraction);
    let x_lo = fractions().fold(f64::INFINITY, f64::min);
    let x_hi = fractions().fold(0.0, f64::max);
    if !(x_lo > 0.0 && x_hi > x_lo) {
        return Err(anyhow!(
            "{}: a plot needs at least two bandwidths",
            path.display()
        ));
    }
    let harmonic = |p: &SweepPoint| p.cost_harmonic.map(|c| c / importance_total);
    let ys: Vec<f64> = points
        .iter()
        .filter_map(harmonic)
        .filter(|&y| y > 0.0)
        .collect();
    // With no finite value (every policy starves some changing URL: binary objectives) the panel
    // keeps an empty placeholder axis: a log axis from 0 to infinity would ask plotters for
    // endless ticks (it ran out of 22 GB).
    let (y_lo, y_hi) = if ys.is_empty() {
        EMPTY_HARMONIC_AXIS
    } else {
        (
            ys.iter().copied().fold(f64::INFINITY, f64::min),
            ys.iter().copied().fold(0.0, f64::max),
        )
    };
    let harmonic_caption = if ys.is_empty() {
        "harmonic staleness: infinite at every point (changing URLs never crawled)"
    } else {
        "harmonic staleness per unit of importance (solid: polite, dashed: no caps)"
    };
    let policies: Vec<Objective> = Objective::ALL
        .into_iter()
        .filter(|o| points.iter().any(|p| p.policy == *o))
        .collect();

    // Left: harmonic staleness (lower is better).
    let mut chart = ChartBuilder::on(&left)
        .caption(harmonic_caption, ("sans-serif", 17))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(
            (x_lo..x_hi).log_scale(),
            (y_lo.min(y_hi) * 0.9..y_hi.max(y_lo) * 1.1).log_scale(),
        )
        .map_err(|e| fail(&e))?;
    chart
        .configure_mesh()
        .x_desc("bandwidth / URLs (fetches per URL per day)")
        .y_desc("J_h / sum of importance")
        .draw()
        .map_err(|e| fail(&e))?;
    for &policy in &policies {
        let colour = colour(policy);
        for polite in [true, false] {
            let line: Vec<(f64, f64)> = points
                .iter()
                .filter(|p| p.policy == policy && p.polite == polite)
                .filter_map(|p| harmonic(p).map(|y| (p.bandwidth_fraction, y)))
                .filter(|&(_, y)| y > 0.0)
                .collect();
            draw_line(&mut chart, line, colour, polite, policy).map_err(|e| fail(&e))?;
        }
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight).map_err(|e| fail(&e))?;

    // Right: fresh share of time (higher is better).
    let mut chart = ChartBuilder::on(&right)
        .caption(
            "fresh share of time, Poisson crawls (solid: polite, dashed: no caps)",
            ("sans-serif", 17),
        )
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d((x_lo..x_hi).log_scale(), 0.0..1.0)
        .map_err(|e| fail(&e))?;
    chart
        .configure_mesh()
        .x_desc("bandwidth / URLs (fetches per URL per day)")
        .y_desc("1 - J_b / sum of importance")
        .draw()
        .map_err(|e| fail(&e))?;
    for &policy in &policies {
        let colour = colour(policy);
        for polite in [true, false] {
            let line: Vec<(f64, f64)> = points
                .iter()
                .filter(|p| p.policy == policy && p.polite == polite)
                .map(|p| (p.bandwidth_fraction, p.freshness_poisson))
                .collect();
            draw_line(&mut chart, line, colour, polite, policy).map_err(|e| fail(&e))?;
        }
    }
    legend(&mut chart, SeriesLabelPosition::LowerRight).map_err(|e| fail(&e))?;
    root.present().map_err(|e| fail(&e))?;
    Ok(())
}

fn colour(policy: Objective) -> RGBColor {
    let k = Objective::ALL
        .iter()
        .position(|&o| o == policy)
        .unwrap_or(0);
    COLOURS[k % COLOURS.len()]
}

fn draw_line<'a, 'b: 'a, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, Cartesian2d<LogCoord<f64>, Y>>,
    line: Vec<(f64, f64)>,
    colour: RGBColor,
    polite: bool,
    policy: Objective,
) -> Result<(), DrawingAreaErrorKind<<SVGBackend<'b> as DrawingBackend>::ErrorType>>
where
    Y: Ranged<ValueType = f64>,
{
    if polite {
        chart
            .draw_series(LineSeries::new(line, colour.stroke_width(2)))?
            .label(policy.name())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 22, y)], colour.stroke_width(2))
            });
    } else {
        chart.draw_series(DashedLineSeries::new(
            line,
            DASH.0,
            DASH.1,
            colour.stroke_width(1),
        ))?;
    }
    Ok(())
}

fn legend<'a, 'b: 'a, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, Cartesian2d<LogCoord<f64>, Y>>,
    position: SeriesLabelPosition,
) -> Result<(), DrawingAreaErrorKind<<SVGBackend<'b> as DrawingBackend>::ErrorType>>
where
    Y: Ranged<ValueType = f64>,
{
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .position(position)
        .draw()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(fraction: f64, harmonic: Option<f64>) -> SweepPoint {
        SweepPoint {
            policy: Objective::BinaryFixed,
            polite: true,
            bandwidth_fraction: fraction,
            bandwidth: fraction * 100.0,
            bandwidth_used: fraction * 100.0,
            multiplier: 1.0,
            rounds: 3,
            cost_harmonic: harmonic,
            cost_binary: 10.0 / fraction,
            cost_fixed_interval: 8.0 / fraction,
            freshness_poisson: 0.5,
            freshness_fixed_interval: 0.6,
            urls_starved: 1,
            hosts_capped: 0,
        }
    }

    #[test]
    fn a_sweep_with_no_finite_harmonic_cost_still_draws_a_small_picture() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sweep.svg");
        let points: Vec<SweepPoint> = [0.01, 0.1, 1.0].iter().map(|&f| point(f, None)).collect();
        write_sweep_svg(&path, &points, 100.0).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.len() < 1 << 20, "{} bytes", svg.len());
        assert!(svg.contains("infinite at every point"));
    }
}
