//! The sweep's picture: cost against bandwidth per policy, polite (solid) and not (dashed), as SVG.

use std::path::Path;

use anyhow::{anyhow, Result};
use plotters::coord::combinators::WithKeyPoints;
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

/// Ticks of a log axis from `lo` to `hi`: labelled at 1, 2 and 5 of every decade (and at the ends
/// when that leaves fewer than two), light at the other integers of each decade.
fn log_ticks(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let (mut bold, mut light) = (Vec::new(), Vec::new());
    let first = lo.log10().floor() as i32;
    let last = hi.log10().ceil() as i32;
    for decade in first..=last {
        for m in 1..10 {
            // the decimal text parsed: 0.02, not 2 x 0.01 = 0.020000000000000004
            let x: f64 = format!("{m}e{decade}").parse().unwrap_or(f64::NAN);
            if x < lo * (1.0 - 1e-12) || x > hi * (1.0 + 1e-12) {
                continue;
            }
            if matches!(m, 1 | 2 | 5) {
                bold.push(x);
            } else {
                light.push(x);
            }
        }
    }
    if bold.len() < 2 {
        bold.extend([lo, hi]);
        bold.sort_by(f64::total_cmp);
        bold.dedup();
    }
    (bold, light)
}

/// A tick's label: the shortest decimal that reads back to it, to three significant digits at
/// most (0.01, 0.2, 1, 50, 0.338).
fn tick_label(x: &f64) -> String {
    let text = format!("{}", x);
    if text.len() <= 6 {
        return text;
    }
    let digits = (2 - x.abs().log10().floor() as i32).max(0) as usize;
    let rounded = format!("{x:.digits$}");
    if rounded.contains('.') {
        rounded
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_owned()
    } else {
        rounded
    }
}

/// A log axis from `lo` to `hi` with [`log_ticks`].
fn log_axis(lo: f64, hi: f64) -> WithKeyPoints<LogCoord<f64>> {
    let (bold, light) = log_ticks(lo, hi);
    (lo..hi)
        .log_scale()
        .with_key_points(bold)
        .with_light_points(light)
}

/// Writes the sweep's plot to `path`: the harmonic cost per unit of importance (left, log scale)
/// and the fresh share of time with Poisson crawls (right), against bandwidth per URL. Policies
/// with no finite harmonic cost (they leave changing URLs uncrawled) are named in a note on the
/// left panel instead of drawn.
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
        "harmonic cost: infinite at every point (changing URLs never crawled)"
    } else {
        "harmonic cost per unit of importance (solid: polite, dashed: no caps)"
    };
    let policies: Vec<Objective> = Objective::ALL
        .into_iter()
        .filter(|o| points.iter().any(|p| p.policy == *o))
        .collect();

    // Left: the harmonic cost (lower is better).
    let mut chart = ChartBuilder::on(&left)
        .caption(harmonic_caption, ("sans-serif", 17))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(
            log_axis(x_lo, x_hi),
            log_axis(y_lo.min(y_hi) * 0.9, y_hi.max(y_lo) * 1.1),
        )
        .map_err(|e| fail(&e))?;
    chart
        .configure_mesh()
        .x_desc("bandwidth / URLs (fetches per URL per day)")
        .y_desc("harmonic cost / total importance")
        .x_label_formatter(&tick_label)
        .y_label_formatter(&tick_label)
        .draw()
        .map_err(|e| fail(&e))?;
    let mut not_drawn = Vec::new();
    for &policy in &policies {
        let colour = colour(policy);
        for polite in [true, false] {
            let line: Vec<(f64, f64)> = points
                .iter()
                .filter(|p| p.policy == policy && p.polite == polite)
                .filter_map(|p| harmonic(p).map(|y| (p.bandwidth_fraction, y)))
                .filter(|&(_, y)| y > 0.0)
                .collect();
            if line.is_empty() {
                if polite {
                    not_drawn.push(policy.name());
                }
                continue;
            }
            draw_line(&mut chart, line, colour, polite, policy).map_err(|e| fail(&e))?;
        }
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight).map_err(|e| fail(&e))?;
    if !not_drawn.is_empty() && !ys.is_empty() {
        // in the lower left, where costs are high and no curve goes
        let font = ("sans-serif", 14).into_font().color(&BLACK);
        let (_, height) = left.dim_in_pixel();
        for (k, line) in [
            format!("not drawn: {}", not_drawn.join(", ")),
            "(infinite harmonic cost: changing URLs never crawled)".to_owned(),
        ]
        .iter()
        .enumerate()
        {
            left.draw(&Text::new(
                line.clone(),
                (90, height as i32 - 110 + 18 * k as i32),
                font.clone(),
            ))
            .map_err(|e| fail(&e))?;
        }
    }

    // Right: fresh share of time (higher is better).
    let mut chart = ChartBuilder::on(&right)
        .caption(
            "fresh share of time, Poisson crawls (solid: polite, dashed: no caps)",
            ("sans-serif", 17),
        )
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(log_axis(x_lo, x_hi), 0.0..1.0)
        .map_err(|e| fail(&e))?;
    chart
        .configure_mesh()
        .x_desc("bandwidth / URLs (fetches per URL per day)")
        .y_desc("1 - binary cost / total importance")
        .x_label_formatter(&tick_label)
        .y_label_formatter(&|y| format!("{:.0}%", 100.0 * y))
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

fn draw_line<'a, 'b: 'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>,
    line: Vec<(f64, f64)>,
    colour: RGBColor,
    polite: bool,
    policy: Objective,
) -> Result<(), DrawingAreaErrorKind<<SVGBackend<'b> as DrawingBackend>::ErrorType>>
where
    X: Ranged<ValueType = f64>,
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

fn legend<'a, 'b: 'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>,
    position: SeriesLabelPosition,
) -> Result<(), DrawingAreaErrorKind<<SVGBackend<'b> as DrawingBackend>::ErrorType>>
where
    X: Ranged<ValueType = f64>,
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

    #[test]
    fn every_decade_is_labelled() {
        let (bold, light) = log_ticks(0.01, 1.0);
        assert_eq!(bold, [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0]);
        assert_eq!(light.len(), 12);
        let labels: Vec<String> = bold.iter().map(tick_label).collect();
        assert_eq!(labels, ["0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1"]);
        // a range inside one decade still gets two labels
        assert_eq!(log_ticks(1.1, 1.8).0, [1.1, 1.8]);
        assert_eq!(tick_label(&0.337_912_345), "0.338");
    }

    #[test]
    fn policies_that_cannot_be_drawn_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sweep.svg");
        let mut points: Vec<SweepPoint> =
            [0.01, 0.1, 1.0].iter().map(|&f| point(f, None)).collect();
        for &f in &[0.01, 0.1, 1.0] {
            points.push(SweepPoint {
                policy: Objective::Harmonic,
                ..point(f, Some(50.0 / f))
            });
        }
        write_sweep_svg(&path, &points, 100.0).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.contains("not drawn: binary-fixed"), "no note");
        // (plotters writes each text on its own line)
        for label in ["0.01", "0.1", "1", "0.5", "5", "50"] {
            assert!(svg.lines().any(|l| l.trim() == label), "no tick {label}");
        }
    }
}
