//! The embedded broker's login: generated at the broker's first start, kept in a file only its
//! owner may read (mode 0600, in a directory only its owner may enter), read by every command
//! that connects to the broker.
//!
//! May not touch: Kafka (the broker derives its SCRAM credential from this; the client builder
//! turns it into librdkafka properties).

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};

/// The user kledger's clients log in as.
pub const USERNAME: &str = "kledger";
/// The SASL mechanism of the embedded broker.
pub const MECHANISM: &str = "SCRAM-SHA-256";

/// A SASL login.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credentials {
    /// The user.
    pub username: String,
    /// The password (random, 256 bits, hex).
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

impl Credentials {
    /// The librdkafka properties that log a client in with these credentials.
    pub fn client_properties(&self) -> [(&'static str, String); 4] {
        [
            ("security.protocol", "SASL_PLAINTEXT".to_owned()),
            ("sasl.mechanism", MECHANISM.to_owned()),
            ("sasl.username", self.username.clone()),
            ("sasl.password", self.password.clone()),
        ]
    }

    /// Reads the credentials at `path`, if the file exists.
    pub fn load(path: &Path) -> anyhow::Result<Option<Self>> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .with_context(|| format!("read the broker credentials in {}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("open {}", path.display())),
        }
    }

    /// Reads the credentials at `path`, creating them first (a random password, the file
    /// 0600 in a 0700 directory) when the file does not exist.
    pub fn load_or_create(path: &Path) -> anyhow::Result<Self> {
        let c = Self::load_or_generate(path)?;
        c.save(path)?;
        Ok(c)
    }

    /// Reads the credentials at `path`, or generates new ones (a random password) without
    /// writing them: [`Credentials::save`] does, when the broker is about to start.
    pub fn load_or_generate(path: &Path) -> anyhow::Result<Self> {
        if let Some(c) = Self::load(path)? {
            return Ok(c);
        }
        let mut secret = [0u8; 32];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut secret)
            .map_err(|_| anyhow::anyhow!("no random bytes for the broker's password"))?;
        Ok(Self {
            username: USERNAME.to_owned(),
            password: kledger_processors::ids::to_hex(&secret),
        })
    }

    /// Writes these credentials to `path` (the file 0600 in a 0700 directory) unless the file
    /// exists already (then it must hold these).
    pub fn save(&self, path: &Path) -> anyhow::Result<()> {
        if let Some(existing) = Self::load(path)? {
            anyhow::ensure!(
                existing == *self,
                "{} holds other broker credentials",
                path.display()
            );
            return Ok(());
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            private_dir(dir)?;
        }
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut f = options
            .open(path)
            .with_context(|| format!("create {}", path.display()))?;
        f.write_all(&serde_json::to_vec(self)?)?;
        f.sync_all()?;
        Ok(())
    }
}

/// Creates `dir` (and its parents) if missing and makes it private to its owner (0700): the
/// broker's and the stores' files hold what crypto-shredding protects.
pub fn private_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(dir)?;
        if meta.permissions().mode() & 0o077 != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                .with_context(|| format!("make {} private (0700)", dir.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_created_private_once_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("broker/credentials");
        let a = Credentials::load_or_create(&path).unwrap();
        let b = Credentials::load_or_create(&path).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.password.len(), 64);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&path), 0o600);
            assert_eq!(mode(path.parent().unwrap()), 0o700);
        }
        assert!(!format!("{a:?}").contains(&a.password));
    }
}
