//! The embedded default broker: tansu (a Kafka-protocol broker) in this process, on threads and
//! a runtime of its own.
//!
//! Storage `sqlite://data/broker/tansu.db` survives restarts (paths are relative to the
//! working directory, a tansu rule); `memory://tansu/` does not. tansu offers no Kafka
//! transactions, so the embedded default runs the `idempotent` delivery mode.
//!
//! - **Its own runtime.** tansu decodes and encodes every frame on its runtime's blocking pool.
//!   On the process's runtime, anything else that filled that pool (the read API's waits did)
//!   stopped the broker, and with it every consumer group. Here it runs on two worker threads
//!   and a blocking pool of [`BLOCKING_THREADS_MAX`] nothing else uses.
//! - **A login.** With [`Credentials`], clients must authenticate with SASL/SCRAM-SHA-256 as
//!   that user (the broker keeps the SCRAM credential in its storage: sqlite only); another
//!   local process can neither read a topic nor publish to one.

use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use tansu_broker::broker::Broker;
use tansu_broker::coordinator::group::administrator::Controller;
use tansu_storage::{ScramCredential, StorageContainer};
use url::Url;

use kledger_runtime::config::credentials::Credentials;

/// The broker runtime's blocking threads at most (one per frame being decoded or encoded).
pub const BLOCKING_THREADS_MAX: usize = 64;
/// The broker runtime's worker threads.
pub const WORKER_THREADS: usize = 2;
/// PBKDF2 iterations of the SCRAM credential (Kafka's minimum is 4,096).
const SCRAM_ITERATIONS: u32 = 8_192;

/// A running in-process broker.
#[derive(Debug)]
pub struct EmbeddedBroker {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    addr: SocketAddr,
}

impl EmbeddedBroker {
    /// Starts a broker listening on `listen` (an IP literal and a port) with `storage`, open
    /// to any client, and waits until it accepts connections.
    pub async fn start(listen: &str, storage: &str) -> anyhow::Result<Self> {
        Self::start_with(listen, storage, None).await
    }

    /// Starts a broker listening on `listen` with `storage` whose clients must log in as
    /// `login` (SCRAM-SHA-256) when given, and waits until it accepts connections.
    pub async fn start_with(
        listen: &str,
        storage: &str,
        login: Option<&Credentials>,
    ) -> anyhow::Result<Self> {
        let addr: SocketAddr = listen
            .parse()
            .with_context(|| format!("listen address {listen:?} (an IP and a port)"))?;
        let url = Url::parse(&format!("tcp://{addr}")).context("listener url")?;
        let storage_url =
            Url::parse(storage).with_context(|| format!("storage url {storage:?}"))?;
        if storage_url.scheme() == "sqlite" {
            // sqlite://dir/file.db: host `dir`, path `/file.db`, relative to the working dir.
            let rel = format!(
                "{}{}",
                storage_url.host_str().unwrap_or_default(),
                storage_url.path()
            );
            if let Some(parent) = Path::new(&rel).parent() {
                kledger_runtime::config::credentials::private_dir(parent)?;
            }
        } else if login.is_some() {
            bail!("the embedded broker's login needs sqlite storage, not {storage:?}");
        }
        let scram = login.map(|l| (l.username.clone(), scram_sha256(&l.password)));
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(WORKER_THREADS)
            .max_blocking_threads(BLOCKING_THREADS_MAX)
            .thread_name("kledger-broker")
            .enable_all()
            .build()
            .context("the embedded broker's runtime")?;
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<anyhow::Result<()>>();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("kledger-broker".into())
            .spawn(move || {
                let serving = rt.block_on(async move {
                    let broker = match build(&url, &storage_url, scram).await {
                        Ok(b) => b,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return None;
                        }
                    };
                    let _ = ready_tx.send(Ok(()));
                    Some(tokio::spawn(serve(broker)))
                });
                // Until stopped (or the broker's handle is dropped).
                let _ = stop_rx.recv();
                if let Some(task) = serving {
                    task.abort();
                }
                rt.shutdown_timeout(Duration::from_secs(2));
            })
            .context("spawn the embedded broker's thread")?;
        let mut broker = Self {
            stop: Some(stop_tx),
            thread: Some(thread),
            addr,
        };
        ready_rx
            .await
            .map_err(|_| anyhow::anyhow!("the embedded broker's thread ended"))??;
        let deadline = Instant::now() + Duration::from_secs(30);
        while tokio::net::TcpStream::connect(addr).await.is_err() {
            if Instant::now() > deadline || broker.thread.as_ref().is_none_or(|t| t.is_finished()) {
                broker.halt();
                bail!("embedded broker did not start listening on {addr}");
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(broker)
    }

    /// The bootstrap address.
    pub fn bootstrap(&self) -> String {
        self.addr.to_string()
    }

    /// Stops the broker.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for EmbeddedBroker {
    fn drop(&mut self) {
        self.halt();
    }
}

type TansuBroker = Broker<Controller<StorageContainer>, StorageContainer>;

/// Builds the broker (retried: reopening the same sqlite file right after a stop can fail
/// briefly).
async fn build(
    url: &Url,
    storage: &Url,
    scram: Option<(String, ScramCredential)>,
) -> anyhow::Result<TansuBroker> {
    let mut attempt = 0;
    let mut backoff = kledger_runtime::backoff::Backoff::from_millis(50, 500);
    loop {
        attempt += 1;
        let mut builder = TansuBroker::builder()
            .node_id(tansu_broker::NODE_ID)
            .cluster_id("kledger")
            .incarnation_id(uuid::Uuid::now_v7())
            .advertised_listener(url.clone())
            .storage(storage.clone())
            .listener(url.clone())
            .silent(true)
            .authentication(scram.is_some());
        if let Some((user, credential)) = &scram {
            builder = builder.scram_credential(
                user.clone(),
                tansu_sans_io::ScramMechanism::Scram256,
                credential.clone(),
            );
        }
        match builder.build().await {
            Ok(b) => return Ok(b),
            Err(e) if attempt < 20 => {
                tracing::debug!(error = %e, attempt, "embedded broker build failed, retrying");
                tokio::time::sleep(backoff.next_pause()).await;
            }
            Err(e) => bail!("start embedded broker: {e}"),
        }
    }
}

async fn serve(mut broker: TansuBroker) {
    if let Err(e) = broker.serve(tokio::time::Instant::now()).await {
        tracing::error!(error = %e, "embedded broker stopped");
    }
}

/// The SCRAM-SHA-256 credential of `password` (RFC 5802: the salted password's stored and
/// server keys), with a random salt.
fn scram_sha256(password: &str) -> ScramCredential {
    use ring::{digest, hmac, pbkdf2, rand::SecureRandom};
    let mut salt = [0u8; 16];
    // Without random bytes, a fixed salt still yields a working credential (the password is
    // random): the salt only defeats precomputation across brokers.
    let _ = ring::rand::SystemRandom::new().fill(&mut salt);
    let mut salted = [0u8; 32];
    pbkdf2::derive(
        pbkdf2::PBKDF2_HMAC_SHA256,
        NonZeroU32::new(SCRAM_ITERATIONS).unwrap_or(NonZeroU32::MIN),
        &salt,
        password.as_bytes(),
        &mut salted,
    );
    let key = hmac::Key::new(hmac::HMAC_SHA256, &salted);
    let client_key = hmac::sign(&key, b"Client Key");
    let stored_key = digest::digest(&digest::SHA256, client_key.as_ref());
    let server_key = hmac::sign(&key, b"Server Key");
    ScramCredential {
        salt: salt.to_vec().into(),
        iterations: SCRAM_ITERATIONS as i32,
        stored_key: stored_key.as_ref().to_vec().into(),
        server_key: server_key.as_ref().to_vec().into(),
    }
}

/// A free TCP port on 127.0.0.1 (for tests and demos; tansu cannot bind port 0).
pub fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// A broker for this crate's tests on a free port, with the embedded default's sqlite storage
/// in a new directory under the working directory (a tansu rule), whose clients log in as
/// `login` when given. The directory lives as long as the returned guard.
#[cfg(test)]
pub(crate) async fn test_broker(
    login: Option<&Credentials>,
) -> (tempfile::TempDir, EmbeddedBroker) {
    let dir = tempfile::tempdir_in(".").unwrap();
    let name = dir
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let broker = EmbeddedBroker::start_with(
        &format!("127.0.0.1:{}", free_port().unwrap()),
        &format!("sqlite://{name}/tansu.db"),
        login,
    )
    .await
    .unwrap();
    (dir, broker)
}
