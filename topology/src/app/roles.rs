//! What one `kledger run` process does (`--role`): each part scales on its own.

/// The parts a process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Roles {
    /// The stream processor (`apply`).
    pub apply: bool,
    /// The view materializer (`project-views`).
    pub views: bool,
    /// The vector sink (`project-qdrant`).
    pub vectors: bool,
    /// The read API and HTTP ingress (`api`).
    pub api: bool,
}

impl Roles {
    /// Every part (`all`, the default).
    pub const ALL: Roles = Roles {
        apply: true,
        views: true,
        vectors: true,
        api: true,
    };

    const NONE: Roles = Roles {
        apply: false,
        views: false,
        vectors: false,
        api: false,
    };

    /// Parses a comma-separated list of `apply`, `project-views`, `project-qdrant`, `api`,
    /// `all`.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut r = Self::NONE;
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part {
                "all" => r = Self::ALL,
                "apply" => r.apply = true,
                "project-views" => r.views = true,
                "project-qdrant" => r.vectors = true,
                "api" => r.api = true,
                other => {
                    return Err(format!(
                        "unknown role {other:?} (apply, project-views, project-qdrant, api, all)"
                    ));
                }
            }
        }
        if r == Self::NONE {
            return Err("no role given".into());
        }
        Ok(r)
    }
}
