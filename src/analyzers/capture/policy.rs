//! The `[capture]` policy of `rea.toml`: which programs may run, where, with which variables, and
//! under which ceilings.
//!
//! The policy is written by the person who runs `rea`, never by the agent: a scenario can only ask
//! for less than the policy allows. A missing file or a missing `[capture]` table leaves capture
//! disabled.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The file, inside the configuration directory, that holds the `[capture]` table.
pub use crate::settings::CONFIG_FILE_NAME;

/// Default ceiling for the wall-clock time of one run (60 s).
pub const DEFAULT_MAX_WALL_TIME_MS: u64 = 60_000;
/// Default ceiling for the CPU time of one run (60 s).
pub const DEFAULT_MAX_CPU_TIME_MS: u64 = 60_000;
/// Default ceiling for the address space of the program (2 GiB).
pub const DEFAULT_MAX_MEMORY_BYTES: u64 = 2 * 1024 * 1024 * 1024;
/// Default ceiling for the bytes kept from each of stdout and stderr (8 MiB).
pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = 8 * 1024 * 1024;
/// Default ceiling for the bytes fed to the program's stdin (8 MiB).
pub const DEFAULT_MAX_STDIN_BYTES: u64 = 8 * 1024 * 1024;
/// Default ceiling for `RLIMIT_NPROC` (processes of the user while the program runs).
pub const DEFAULT_MAX_PROCESSES: u64 = 256;

/// What the operator allows process capture to do. Read from the `[capture]` table of
/// `$REA_CONFIG_DIR/rea.toml`; every field may be left out and takes the default shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Policy {
    /// Whether process capture may run at all (default `false`).
    pub enabled: bool,
    /// Absolute directories that an executable must lie inside once symlinks and `..` are
    /// resolved. An empty list allows no executable.
    pub executable_roots: Vec<PathBuf>,
    /// Absolute directories that the working directory must lie inside once resolved. An empty
    /// list allows no working directory.
    pub working_directory_roots: Vec<PathBuf>,
    /// Names of environment variables a scenario may pass; every other variable is absent from
    /// the program's environment.
    pub allowed_environment: Vec<String>,
    /// Whether a scenario may ask for network access (default `false`: every run gets a new,
    /// empty network namespace).
    pub allow_network: bool,
    /// Ceiling for a scenario's `wall_time_ms`, in milliseconds (default 60000).
    pub max_wall_time_ms: u64,
    /// Ceiling for a scenario's `cpu_time_ms`, in milliseconds (default 60000).
    pub max_cpu_time_ms: u64,
    /// Ceiling for a scenario's `memory_bytes` (address-space limit), in bytes (default 2 GiB).
    pub max_memory_bytes: u64,
    /// Ceiling for each of a scenario's `stdout_cap_bytes` and `stderr_cap_bytes` (default 8 MiB).
    pub max_output_bytes: u64,
    /// Ceiling for the size of a scenario's stdin, in bytes (default 8 MiB).
    pub max_stdin_bytes: u64,
    /// Ceiling for a scenario's `max_processes` (`RLIMIT_NPROC`, default 256).
    pub max_processes: u64,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            enabled: false,
            executable_roots: Vec::new(),
            working_directory_roots: Vec::new(),
            allowed_environment: Vec::new(),
            allow_network: false,
            max_wall_time_ms: DEFAULT_MAX_WALL_TIME_MS,
            max_cpu_time_ms: DEFAULT_MAX_CPU_TIME_MS,
            max_memory_bytes: DEFAULT_MAX_MEMORY_BYTES,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            max_stdin_bytes: DEFAULT_MAX_STDIN_BYTES,
            max_processes: DEFAULT_MAX_PROCESSES,
        }
    }
}

/// Why a policy could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The configuration file exists but could not be read.
    #[error("cannot read the capture policy {path}: {source}")]
    Read {
        /// The file that was read.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The text is not valid TOML, or the `[capture]` table has a wrong type or an unknown key.
    #[error("the capture policy is not valid TOML for the [capture] table: {source}")]
    Syntax {
        /// What the TOML parser said (it names the line and the key).
        #[source]
        source: Box<toml::de::Error>,
    },
    /// A value parses but cannot be used (a relative root, a zero ceiling, a bad variable name).
    #[error("capture policy field `{field}` is invalid: {reason}")]
    Invalid {
        /// The field of the `[capture]` table.
        field: &'static str,
        /// What is wrong with it and how to fix it.
        reason: String,
    },
    /// An error in a named file (wraps one of the others).
    #[error("{path}: {source}")]
    InFile {
        /// The configuration file.
        path: PathBuf,
        /// The error found in it.
        #[source]
        source: Box<PolicyError>,
    },
}

/// The part of `rea.toml` this module reads; other tables belong to other modules and are
/// ignored here.
#[derive(Deserialize)]
struct ConfigFile {
    #[serde(default)]
    capture: Option<Policy>,
}

impl Policy {
    /// Parses a whole `rea.toml` text and returns its `[capture]` table, validated. A text
    /// without that table gives the default (disabled) policy.
    pub fn from_toml_str(text: &str) -> Result<Policy, PolicyError> {
        let file: ConfigFile = toml::from_str(text).map_err(|source| PolicyError::Syntax {
            source: Box::new(source),
        })?;
        let policy = file.capture.unwrap_or_default();
        policy.validate()?;
        Ok(policy)
    }

    /// Checks the values that TOML types cannot express.
    fn validate(&self) -> Result<(), PolicyError> {
        for (field, roots) in [
            ("executable_roots", &self.executable_roots),
            ("working_directory_roots", &self.working_directory_roots),
        ] {
            if let Some(root) = roots.iter().find(|root| !root.is_absolute()) {
                return Err(PolicyError::Invalid {
                    field,
                    reason: format!("`{}` is not an absolute path", root.display()),
                });
            }
        }
        if let Some(name) = self
            .allowed_environment
            .iter()
            .find(|name| !is_valid_variable_name(name))
        {
            return Err(PolicyError::Invalid {
                field: "allowed_environment",
                reason: format!(
                    "`{name}` is not a variable name (it must be non-empty and contain neither `=` nor NUL)"
                ),
            });
        }
        for (field, value) in [
            ("max_wall_time_ms", self.max_wall_time_ms),
            ("max_cpu_time_ms", self.max_cpu_time_ms),
            ("max_memory_bytes", self.max_memory_bytes),
            ("max_output_bytes", self.max_output_bytes),
            ("max_processes", self.max_processes),
        ] {
            if value == 0 {
                return Err(PolicyError::Invalid {
                    field,
                    reason: "a ceiling of 0 allows no run; remove the key to use the default"
                        .to_owned(),
                });
            }
        }
        Ok(())
    }

    /// Whether `name` may be passed to the program.
    pub fn allows_variable(&self, name: &str) -> bool {
        self.allowed_environment
            .iter()
            .any(|allowed| allowed == name)
    }
}

/// Whether `name` can be an environment variable name at all.
pub(crate) fn is_valid_variable_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('=') && !name.contains('\0')
}

/// Reads `<config_dir>/rea.toml`. A missing file is not an error: capture is then disabled.
pub fn load_policy(config_dir: &Path) -> Result<Policy, PolicyError> {
    let path = config_dir.join(CONFIG_FILE_NAME);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Policy::default());
        }
        Err(source) => return Err(PolicyError::Read { path, source }),
    };
    Policy::from_toml_str(&text).map_err(|source| PolicyError::InFile {
        path,
        source: Box::new(source),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_table_is_disabled_with_defaults() {
        let policy = Policy::from_toml_str("[other]\nkey = 1\n").unwrap();
        assert_eq!(policy, Policy::default());
        assert!(!policy.enabled);
        assert_eq!(policy.max_wall_time_ms, DEFAULT_MAX_WALL_TIME_MS);
    }

    #[test]
    fn full_table_parses() {
        let policy = Policy::from_toml_str(
            r#"
            [capture]
            enabled = true
            executable_roots = ["/usr/bin", "/opt/app"]
            working_directory_roots = ["/tmp"]
            allowed_environment = ["LANG", "HOME"]
            allow_network = true
            max_wall_time_ms = 5000
            max_memory_bytes = 1048576000
            max_output_bytes = 65536
            "#,
        )
        .unwrap();
        assert!(policy.enabled);
        assert_eq!(
            policy.executable_roots,
            vec![PathBuf::from("/usr/bin"), PathBuf::from("/opt/app")]
        );
        assert!(policy.allows_variable("LANG"));
        assert!(!policy.allows_variable("PATH"));
        assert_eq!(policy.max_wall_time_ms, 5000);
        assert_eq!(policy.max_cpu_time_ms, DEFAULT_MAX_CPU_TIME_MS);
        assert_eq!(policy.max_output_bytes, 65536);
    }

    #[test]
    fn unknown_key_and_relative_root_are_errors() {
        let typo = Policy::from_toml_str("[capture]\nexecutable_root = [\"/usr/bin\"]\n");
        assert!(matches!(typo, Err(PolicyError::Syntax { .. })), "{typo:?}");
        let relative = Policy::from_toml_str("[capture]\nexecutable_roots = [\"bin\"]\n");
        assert!(
            matches!(
                relative,
                Err(PolicyError::Invalid {
                    field: "executable_roots",
                    ..
                })
            ),
            "{relative:?}"
        );
        let zero = Policy::from_toml_str("[capture]\nmax_wall_time_ms = 0\n");
        assert!(matches!(zero, Err(PolicyError::Invalid { .. })), "{zero:?}");
        let bad_name = Policy::from_toml_str("[capture]\nallowed_environment = [\"A=B\"]\n");
        assert!(
            matches!(bad_name, Err(PolicyError::Invalid { .. })),
            "{bad_name:?}"
        );
    }

    #[test]
    fn load_policy_missing_file_is_disabled_and_bad_file_names_the_path() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load_policy(dir.path()).unwrap(), Policy::default());
        std::fs::write(
            dir.path().join(CONFIG_FILE_NAME),
            "[capture]\nenabled = 3\n",
        )
        .unwrap();
        let error = load_policy(dir.path()).unwrap_err();
        assert!(matches!(error, PolicyError::InFile { .. }));
        assert!(error.to_string().contains(CONFIG_FILE_NAME), "{error}");
    }
}
