//! Collections (seed 001): named groups of path prefixes, each prefix with a context
//! text, read from YAML. A path's resolution (the collections it falls in and the
//! joined context) is stored with its path entry and filters searches.
//!
//! ```yaml
//! collections:
//!   - name: backend
//!     description: Backend services and APIs
//!     pathContext:
//!       "cmd/": Application entry points
//!       "internal/db/": Database stores and migrations
//! ```

use std::path::Path;

use serde::Deserialize;

use crate::error::IngestError;

/// Most collections in one registry.
pub const MAX_COLLECTIONS: usize = 1024;
/// Most prefixes in one collection.
pub const MAX_PREFIXES: usize = 4096;

/// One collection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Collection {
    /// Unique, non-empty name.
    pub name: String,
    /// Free text.
    pub description: String,
    /// `(prefix, context)` pairs, sorted by prefix.
    pub path_context: Vec<(String, String)>,
}

/// The collections of a project, in the order the file defines them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Registry {
    collections: Vec<Collection>,
}

/// What a path resolves to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolution {
    /// Names of the collections with a matching prefix, in registry order.
    pub collections: Vec<String>,
    /// Contexts of every matching prefix, shortest prefix first (ties in registry
    /// order), joined by a blank line; empty if none matches.
    pub context: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    collections: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default, rename = "pathContext")]
    path_context: std::collections::BTreeMap<String, String>,
}

impl Registry {
    /// Loads a registry; a missing file is an empty registry, a malformed one an error
    /// naming the file.
    pub fn load(path: &Path) -> Result<Self, IngestError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::from_yaml(&text).map_err(|reason| IngestError::Malformed {
                path: path.display().to_string(),
                format: "collections YAML",
                reason,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(source) => Err(IngestError::Io {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    /// Parses a registry from YAML text.
    pub fn from_yaml(text: &str) -> Result<Self, String> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let file: File = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
        if file.collections.len() > MAX_COLLECTIONS {
            return Err(format!("more than {MAX_COLLECTIONS} collections"));
        }
        let mut collections: Vec<Collection> = Vec::with_capacity(file.collections.len());
        for entry in file.collections {
            if entry.name.trim().is_empty() {
                return Err("a collection has an empty name".into());
            }
            if collections.iter().any(|c| c.name == entry.name) {
                return Err(format!("collection {:?} is defined twice", entry.name));
            }
            if entry.path_context.len() > MAX_PREFIXES {
                return Err(format!(
                    "collection {:?} has more than {MAX_PREFIXES} prefixes",
                    entry.name
                ));
            }
            collections.push(Collection {
                name: entry.name,
                description: entry.description,
                path_context: entry.path_context.into_iter().collect(),
            });
        }
        Ok(Self { collections })
    }

    /// The collections, in file order.
    pub fn collections(&self) -> &[Collection] {
        &self.collections
    }

    /// True if there are no collections.
    pub fn is_empty(&self) -> bool {
        self.collections.is_empty()
    }

    /// Resolves a relative path by prefix matching.
    pub fn resolve(&self, path: &str) -> Resolution {
        let mut matches: Vec<(usize, usize, &str)> = Vec::new();
        let mut names = Vec::new();
        for (index, collection) in self.collections.iter().enumerate() {
            let before = matches.len();
            for (prefix, context) in &collection.path_context {
                if path.starts_with(prefix.as_str()) {
                    matches.push((prefix.len(), index, context));
                }
            }
            if matches.len() > before {
                names.push(collection.name.clone());
            }
        }
        matches.sort_by_key(|(len, index, _)| (*len, *index));
        let context = matches
            .iter()
            .map(|(_, _, c)| *c)
            .filter(|c| !c.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n");
        Resolution {
            collections: names,
            context,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const YAML: &str = r#"
collections:
  - name: "backend"
    description: "Backend services and APIs"
    pathContext:
      "cmd/": "Application entry points and CLI commands"
      "internal/worker/": "HTTP API server and handlers"
      "internal/": "Internal packages"
  - name: "search"
    description: "Search and retrieval"
    pathContext:
      "internal/search/": "Hybrid search engine"
"#;

    #[test]
    fn seed_examples_resolve() {
        let r = Registry::from_yaml(YAML).unwrap();
        assert_eq!(r.collections().len(), 2);
        let res = r.resolve("internal/search/rrf.go");
        assert_eq!(res.collections, vec!["backend", "search"]);
        assert_eq!(res.context, "Internal packages\n\nHybrid search engine");
        let res = r.resolve("internal/worker/handlers.go");
        assert_eq!(
            res.context,
            "Internal packages\n\nHTTP API server and handlers"
        );
        assert_eq!(r.resolve("unknown/path.go"), Resolution::default());
    }

    #[test]
    fn missing_empty_and_broken_files() {
        let dir = std::env::temp_dir().join(format!("cfs-collections-{}", std::process::id()));
        assert!(Registry::load(&dir.join("absent.yaml")).unwrap().is_empty());
        assert!(Registry::from_yaml("").unwrap().is_empty());
        assert!(Registry::from_yaml("collections: [{name: a}, {name: a}]").is_err());
        assert!(Registry::from_yaml("collections: [{name: ''}]").is_err());
        assert!(Registry::from_yaml("collections: 3").is_err());
        assert!(Registry::from_yaml("colections: []").is_err());
    }
}
