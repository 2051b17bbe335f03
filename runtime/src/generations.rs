//! Projection generations: a projection (the view store, the embedded vector index) lives in
//! a generation directory `<root>/gNNNNNN`; `<root>/ACTIVE` names the one readers use.
//!
//! A rebuild writes a new generation (named in `<root>/BUILDING`, so a rebuild killed midway
//! resumes it), and when it has caught up with the outbox it closes it and replaces `ACTIVE`
//! atomically (write a temporary file, fsync, rename). A running kledger notices the change
//! ([`Live::refresh`]), opens the new generation, swaps it in for new readers, and deletes the
//! old one once the last reader let go of it. Readers never see a half-built projection.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use anyhow::Context;

/// The file naming the active generation.
pub const ACTIVE: &str = "ACTIVE";
/// The file naming the generation a rebuild is writing.
pub const BUILDING: &str = "BUILDING";

/// The generation directories under one root.
#[derive(Debug, Clone)]
pub struct Generations {
    root: PathBuf,
}

fn valid(name: &str) -> bool {
    name.len() == 7 && name.starts_with('g') && name[1..].bytes().all(|b| b.is_ascii_digit())
}

/// Writes `content` to `path` atomically: a temporary file, fsync, rename, fsync of the dir.
pub fn write_atomic(path: &Path, content: &str) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = path.with_extension("tmp");
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(content.as_bytes())?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    std::fs::File::open(dir)?.sync_all()
}

impl Generations {
    /// The generations under `root` (created if missing).
    pub fn new(root: &Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(root).with_context(|| format!("create {}", root.display()))?;
        Ok(Self {
            root: root.to_owned(),
        })
    }

    fn read(&self, file: &str) -> anyhow::Result<Option<String>> {
        match std::fs::read_to_string(self.root.join(file)) {
            Ok(s) => {
                let name = s.trim().to_owned();
                anyhow::ensure!(
                    valid(&name),
                    "{}: {name:?} is not a generation",
                    self.root.join(file).display()
                );
                Ok(Some(name))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("read {}", self.root.join(file).display())),
        }
    }

    /// The active generation, if any.
    pub fn active(&self) -> anyhow::Result<Option<String>> {
        self.read(ACTIVE)
    }

    /// The generation a rebuild is writing, if any.
    pub fn building(&self) -> anyhow::Result<Option<String>> {
        self.read(BUILDING)
    }

    /// A generation's directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// Every generation directory, in order.
    pub fn list(&self) -> anyhow::Result<Vec<String>> {
        let mut v = Vec::new();
        for e in std::fs::read_dir(&self.root)? {
            let name = e?.file_name().to_string_lossy().into_owned();
            if valid(&name) {
                v.push(name);
            }
        }
        v.sort();
        Ok(v)
    }

    /// The active generation, making a first one active when there is none (a fresh install
    /// builds its projection in place; readiness reports it until it has caught up).
    pub fn active_or_first(&self) -> anyhow::Result<String> {
        if let Some(g) = self.active()? {
            return Ok(g);
        }
        let g = self.next_name()?;
        std::fs::create_dir_all(self.path(&g))?;
        write_atomic(&self.root.join(ACTIVE), &g)?;
        Ok(g)
    }

    fn next_name(&self) -> anyhow::Result<String> {
        let last = self
            .list()?
            .last()
            .map_or(0, |g| g[1..].parse::<u32>().unwrap_or(0));
        Ok(format!("g{:06}", last + 1))
    }

    /// The generation to rebuild into: the one a previous rebuild left unfinished, else a new
    /// one. Returns (name, resumed).
    pub fn begin(&self) -> anyhow::Result<(String, bool)> {
        if let Some(g) = self.building()?
            && self.path(&g).exists()
            && self.active()?.as_deref() != Some(g.as_str())
        {
            return Ok((g, true));
        }
        let g = self.next_name()?;
        std::fs::create_dir_all(self.path(&g))?;
        write_atomic(&self.root.join(BUILDING), &g)?;
        Ok((g, false))
    }

    /// Makes `name` the active generation (atomically) and ends the rebuild.
    pub fn promote(&self, name: &str) -> anyhow::Result<()> {
        write_atomic(&self.root.join(ACTIVE), name)?;
        match std::fs::remove_file(self.root.join(BUILDING)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes generations that are neither active nor being built and that `in_use` says no
    /// process holds (e.g. a RocksDB lock that cannot be taken). Returns the deleted ones.
    pub fn collect_garbage(&self, in_use: &dyn Fn(&Path) -> bool) -> anyhow::Result<Vec<String>> {
        let keep = [self.active()?, self.building()?];
        let mut deleted = Vec::new();
        for g in self.list()? {
            if keep.iter().any(|k| k.as_deref() == Some(g.as_str())) || in_use(&self.path(&g)) {
                continue;
            }
            std::fs::remove_dir_all(self.path(&g))
                .with_context(|| format!("delete {}", self.path(&g).display()))?;
            deleted.push(g);
        }
        Ok(deleted)
    }
}

/// How long an old generation may stay in use by readers after a swap before it is left for
/// the next rebuild to delete.
pub const RETIRE_WAIT: Duration = Duration::from_secs(60);

type Opener<T> = Box<dyn Fn(&Path) -> anyhow::Result<T> + Send + Sync>;

/// The active generation of a projection, opened, swapped when `ACTIVE` changes.
pub struct Live<T> {
    gens: Generations,
    open: Opener<T>,
    current: RwLock<(String, Arc<T>)>,
    delete_retired: bool,
}

impl<T> std::fmt::Debug for Live<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("root", &self.gens.root)
            .field(
                "generation",
                &self.current.read().map(|c| c.0.clone()).unwrap_or_default(),
            )
            .finish()
    }
}

impl<T: Send + Sync + 'static> Live<T> {
    /// Opens the active generation under `root` (a first one when none is active) with
    /// `open`. `delete_retired`: this process owns the projection (writes it) and deletes a
    /// generation it swapped out; a read-only follower leaves that to the owner.
    pub fn open(
        root: &Path,
        delete_retired: bool,
        open: impl Fn(&Path) -> anyhow::Result<T> + Send + Sync + 'static,
    ) -> anyhow::Result<Self> {
        let gens = Generations::new(root)?;
        let g = gens.active_or_first()?;
        let value = open(&gens.path(&g)).with_context(|| format!("open generation {g}"))?;
        Ok(Self {
            gens,
            open: Box::new(open),
            current: RwLock::new((g, Arc::new(value))),
            delete_retired,
        })
    }

    /// A projection opened by the caller, served as generation `name` under `root` (benches
    /// and tools; it swaps like any other when `root`'s `ACTIVE` names another generation).
    pub fn with_value(
        root: &Path,
        name: &str,
        value: T,
        open: impl Fn(&Path) -> anyhow::Result<T> + Send + Sync + 'static,
    ) -> anyhow::Result<Self> {
        Ok(Self {
            gens: Generations::new(root)?,
            open: Box::new(open),
            current: RwLock::new((name.to_owned(), Arc::new(value))),
            delete_retired: false,
        })
    }

    /// The projection readers use now.
    pub fn get(&self) -> Arc<T> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .1
            .clone()
    }

    /// The active generation's name.
    pub fn generation(&self) -> String {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .clone()
    }

    /// Swaps in the active generation if `ACTIVE` names another one. True when it swapped.
    pub fn refresh(&self) -> anyhow::Result<bool> {
        let Some(active) = self.gens.active()? else {
            return Ok(false);
        };
        if active == self.generation() {
            return Ok(false);
        }
        let value = Arc::new(
            (self.open)(&self.gens.path(&active))
                .with_context(|| format!("open generation {active}"))?,
        );
        let (old_name, old) = {
            let mut cur = self.current.write().unwrap_or_else(|e| e.into_inner());
            std::mem::replace(&mut *cur, (active.clone(), value))
        };
        tracing::info!(from = %old_name, to = %active, root = %self.gens.root.display(), "projection generation swapped");
        if self.delete_retired {
            let path = self.gens.path(&old_name);
            std::thread::Builder::new()
                .name("kledger-retire".into())
                .spawn(move || retire(old, &path))
                .context("spawn retire thread")?;
        }
        Ok(true)
    }
}

/// Waits for the last reader of `old` to finish, then deletes its directory.
fn retire<T>(old: Arc<T>, path: &Path) {
    let until = Instant::now() + RETIRE_WAIT;
    while Arc::strong_count(&old) > 1 {
        if Instant::now() > until {
            tracing::warn!(path = %path.display(), "old generation still in use; the next rebuild deletes it");
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(old);
    if let Err(e) = std::fs::remove_dir_all(path) {
        tracing::warn!(path = %path.display(), error = %e, "deleting the old generation failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn begin_resumes_an_unfinished_rebuild_and_promote_swaps() {
        let dir = tempfile::tempdir().unwrap();
        let g = Generations::new(dir.path()).unwrap();
        assert_eq!(g.active_or_first().unwrap(), "g000001");
        let (b, resumed) = g.begin().unwrap();
        assert_eq!((b.as_str(), resumed), ("g000002", false));
        // Killed here: the next rebuild resumes the same generation.
        assert_eq!(g.begin().unwrap(), ("g000002".to_owned(), true));
        g.promote(&b).unwrap();
        assert_eq!(g.active().unwrap().as_deref(), Some("g000002"));
        assert_eq!(g.building().unwrap(), None);
        assert_eq!(g.begin().unwrap(), ("g000003".to_owned(), false));
        let deleted = g.collect_garbage(&|_| false).unwrap();
        assert_eq!(deleted, vec!["g000001".to_owned()]);
    }

    #[test]
    fn live_swaps_to_the_promoted_generation_and_retires_the_old_one() {
        let dir = tempfile::tempdir().unwrap();
        let live = Live::open(dir.path(), true, |p: &Path| {
            Ok(p.file_name().unwrap().to_string_lossy().into_owned())
        })
        .unwrap();
        assert_eq!(*live.get(), "g000001");
        assert!(!live.refresh().unwrap());
        let held = live.get();
        let g = Generations::new(dir.path()).unwrap();
        let (b, _) = g.begin().unwrap();
        g.promote(&b).unwrap();
        assert!(live.refresh().unwrap());
        assert_eq!(*live.get(), "g000002");
        // The old generation is deleted once its last reader lets go.
        assert!(dir.path().join("g000001").exists());
        drop(held);
        let until = Instant::now() + Duration::from_secs(5);
        while dir.path().join("g000001").exists() {
            assert!(Instant::now() < until, "old generation not deleted");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
