//! The slot registry: stable keys of primary-user facts that hold at most one active value.
//!
//! Preferences stay unslotted unless a stable key is registered here (seed 001): an unknown slot
//! is rejected rather than silently treated as replaceable.

/// Registered slots.
pub const SLOTS: &[&str] = &[
    "preferred_name",
    "pronouns",
    "primary_language",
    "age_years",
    "timezone",
    "home_city",
    "work_city",
    "occupation",
    "employer",
    "communication_style",
    "dietary_preferences",
    "current_focus",
];

/// Aliases accepted on input and stored under their canonical slot.
pub const ALIASES: &[(&str, &str)] = &[
    ("name", "preferred_name"),
    ("nickname", "preferred_name"),
    ("pronoun", "pronouns"),
    ("language", "primary_language"),
    ("native_language", "primary_language"),
    ("age", "age_years"),
    ("tz", "timezone"),
    ("time_zone", "timezone"),
    ("city", "home_city"),
    ("home", "home_city"),
    ("location", "home_city"),
    ("residence", "home_city"),
    ("office_city", "work_city"),
    ("work_location", "work_city"),
    ("job", "occupation"),
    ("job_title", "occupation"),
    ("profession", "occupation"),
    ("company", "employer"),
    ("workplace", "employer"),
    ("style", "communication_style"),
    ("tone", "communication_style"),
    ("diet", "dietary_preferences"),
    ("dietary_restrictions", "dietary_preferences"),
    ("focus", "current_focus"),
];

/// The canonical slot for a registered slot or alias (exact, lowercase match).
pub fn canonical(slot: &str) -> Option<&'static str> {
    SLOTS
        .iter()
        .find(|s| **s == slot)
        .copied()
        .or_else(|| ALIASES.iter().find(|(a, _)| *a == slot).map(|(_, s)| *s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_alias_maps_to_a_registered_slot() {
        for (alias, slot) in ALIASES {
            assert!(SLOTS.contains(slot), "{alias} -> {slot}");
            assert!(!SLOTS.contains(alias), "alias {alias} shadows a slot");
        }
        assert_eq!(canonical("city"), Some("home_city"));
        assert_eq!(canonical("home_city"), Some("home_city"));
        assert_eq!(canonical("Home_City"), None);
        assert_eq!(canonical("favourite_color"), None);
    }
}
