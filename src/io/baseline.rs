//! The bare I/O of a run, for benchmarks: read every row group of the inputs and write the rows
//! back as ZSTD Parquet with the same writer, on the same number of threads, nothing else.

use std::fs::File;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde::Serialize;

use super::parquet_out::{Writer, ROW_GROUP_ROWS};
use super::{inputs, pages};

/// What the baseline measured.
#[derive(Debug, Serialize)]
pub struct Baseline {
    pub rows: u64,
    pub threads: usize,
    /// Wall seconds of read + write, all threads.
    pub seconds: f64,
    /// Seconds the slowest thread spent reading.
    pub read_seconds: f64,
    /// Seconds the slowest thread spent writing.
    pub write_seconds: f64,
}

/// Reads `specs` and writes them to `out/part-TTT.parquet` with `threads` threads.
pub fn run(specs: &[String], out: &Path, threads: usize) -> Result<Baseline> {
    let files = pages::open_all(&inputs::expand(specs)?, Default::default())?;
    let units = pages::units(&files);
    std::fs::create_dir_all(out)?;
    let start = Instant::now();
    let results: Vec<Result<(u64, f64, f64)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (files, units) = (&files, &units);
                scope.spawn(move || -> Result<(u64, f64, f64)> {
                    let (mut rows, mut read_s, mut write_s) = (0u64, 0.0, 0.0);
                    let mut writer: Option<Writer> = None;
                    for unit in units.iter().skip(t).step_by(threads) {
                        let t0 = Instant::now();
                        let path = &files[unit.file as usize].path;
                        let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(path)?)?;
                        let batches: Vec<_> = builder
                            .with_row_groups(vec![unit.row_group])
                            .build()?
                            .collect::<std::result::Result<_, _>>()
                            .with_context(|| format!("reading {}", path.display()))?;
                        let t1 = Instant::now();
                        for b in &batches {
                            let w = match &mut writer {
                                Some(w) => w,
                                None => writer.insert(Writer::create(
                                    &out.join(format!("part-{t:03}.parquet")),
                                    b.schema(),
                                    &[],
                                    ROW_GROUP_ROWS,
                                )?),
                            };
                            w.write(b)?;
                            rows += b.num_rows() as u64;
                        }
                        read_s += (t1 - t0).as_secs_f64();
                        write_s += t1.elapsed().as_secs_f64();
                    }
                    if let Some(w) = writer {
                        let t1 = Instant::now();
                        w.finish()?;
                        write_s += t1.elapsed().as_secs_f64();
                    }
                    Ok((rows, read_s, write_s))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a thread panicked")))
            })
            .collect()
    });
    let mut b = Baseline {
        rows: 0,
        threads,
        seconds: start.elapsed().as_secs_f64(),
        read_seconds: 0.0,
        write_seconds: 0.0,
    };
    for r in results {
        let (rows, read_s, write_s) = r?;
        b.rows += rows;
        b.read_seconds = b.read_seconds.max(read_s);
        b.write_seconds = b.write_seconds.max(write_s);
    }
    Ok(b)
}
