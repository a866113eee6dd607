//! How much a chart may decompress to, as Helm v4's loader bounds it
//! (`MaxDecompressedChartSize`, 100 MiB, over all files of an archive, and
//! `MaxDecompressedFileSize`, 5 MiB, for any one file of an archive or a
//! directory). Helm sets these as SDK variables only; `rudder` also takes
//! them as `--max-chart-size` and `--max-file-size`.

use std::cell::Cell;
use std::io::Read;
use std::rc::Rc;

/// The sizes a chart may reach once read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// All files of one archive together, decompressed.
    pub max_chart_size: u64,
    /// Any one file, decompressed (archives) or on disk (directories).
    pub max_file_size: u64,
}

impl Budget {
    /// Helm's `MaxDecompressedChartSize`.
    pub const DEFAULT_MAX_CHART_SIZE: u64 = 100 << 20;
    /// Helm's `MaxDecompressedFileSize`.
    pub const DEFAULT_MAX_FILE_SIZE: u64 = 5 << 20;

    /// How much of the tar stream (headers, padding and pax records
    /// included) is read before giving up: twice the files' budget plus
    /// room for the headers of many small files. The tar reader buffers
    /// pax and long-name records whole, so the stream itself needs a bound.
    fn stream_limit(&self) -> u64 {
        self.max_chart_size
            .saturating_mul(2)
            .saturating_add(64 << 20)
    }
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_chart_size: Self::DEFAULT_MAX_CHART_SIZE,
            max_file_size: Self::DEFAULT_MAX_FILE_SIZE,
        }
    }
}

/// A chart over its [`Budget`], worded as Helm words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TooLarge {
    #[error("decompressed chart is larger than the maximum size {0}")]
    Chart(u64),
    #[error("decompressed chart file {name:?} is larger than the maximum file size {limit}")]
    ArchiveFile { name: String, limit: u64 },
    #[error("chart file {name:?} is larger than the maximum file size {limit}")]
    DirFile { name: String, limit: u64 },
}

/// Counts down what one archive may still decompress to.
pub(crate) struct Remaining {
    budget: Budget,
    left: u64,
}

impl Remaining {
    pub(crate) fn new(budget: Budget) -> Self {
        Remaining {
            budget,
            left: budget.max_chart_size,
        }
    }

    /// The decompressed tar stream, cut off (with an error) past its limit;
    /// `tripped` tells afterwards whether that is why reading failed.
    pub(crate) fn stream<R: Read>(&self, inner: R, tripped: Rc<Cell<bool>>) -> Capped<R> {
        Capped {
            inner,
            left: self.budget.stream_limit(),
            tripped,
        }
    }

    /// Reads one entry of `declared` bytes, refusing before reading when its
    /// header already says it is too large, as Helm does.
    pub(crate) fn read_entry(
        &mut self,
        name: &str,
        declared: u64,
        entry: &mut impl Read,
    ) -> Result<Vec<u8>, ReadError> {
        let limit = self.budget.max_chart_size;
        if declared > self.left {
            return Err(TooLarge::Chart(limit).into());
        }
        if declared > self.budget.max_file_size {
            return Err(TooLarge::ArchiveFile {
                name: name.to_string(),
                limit: self.budget.max_file_size,
            }
            .into());
        }
        let mut buf = Vec::with_capacity(declared as usize);
        entry
            .take(self.left)
            .read_to_end(&mut buf)
            .map_err(ReadError::Io)?;
        let read = buf.len() as u64;
        self.left -= read;
        // Fewer bytes than declared: the budget ran out mid-file.
        if read < declared || (self.left == 0 && declared > 0) {
            return Err(TooLarge::Chart(limit).into());
        }
        Ok(buf)
    }

    /// Checks a directory's file against the per-file limit before reading it.
    pub(crate) fn check_dir_file(
        budget: &Budget,
        path: &std::path::Path,
        size: u64,
    ) -> Result<(), TooLarge> {
        if size > budget.max_file_size {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            return Err(TooLarge::DirFile {
                name,
                limit: budget.max_file_size,
            });
        }
        Ok(())
    }
}

/// Why an archive entry could not be read.
#[derive(Debug)]
pub(crate) enum ReadError {
    TooLarge(TooLarge),
    Io(std::io::Error),
}

impl From<TooLarge> for ReadError {
    fn from(e: TooLarge) -> Self {
        ReadError::TooLarge(e)
    }
}

/// A reader that fails once more than its limit has been read.
pub(crate) struct Capped<R> {
    inner: R,
    left: u64,
    tripped: Rc<Cell<bool>>,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            self.tripped.set(true);
            return Err(std::io::Error::other("decompressed chart stream too large"));
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}
