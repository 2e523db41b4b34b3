//! Library edges: each image's load commands resolved against the files of the target, the
//! bundles linked to their executables, and libraries loaded from outside the bundle.

use super::*;

impl Builder<'_> {
    /// The directory `@executable_path` stands for when `image` is loaded.
    fn executable_dir(&self, image: &PendingImage) -> Option<String> {
        if image.is_main_executable_type {
            return Some(parent(&image.file).to_string());
        }
        let components: Vec<&str> = image.file.split('/').collect();
        let app = (0..components.len().saturating_sub(1))
            .rev()
            .find(|&i| components[i].ends_with(".app") && components[i + 1] == "Contents");
        match app {
            Some(i) => Some(format!("{}/Contents/MacOS", components[..=i].join("/"))),
            None if self.directory_target && image.file.starts_with("Contents/") => {
                Some(String::from("Contents/MacOS"))
            }
            None => None,
        }
    }

    /// Where a bundle keeps its executable and seal, from the location of its Info.plist:
    /// `(bundle directory, content directory, executable directory)`.
    fn bundle_layout(plist: &str) -> (String, String, String) {
        let dir = parent(plist);
        let root = |path: &str| {
            if path.is_empty() {
                ".".to_string()
            } else {
                path.to_string()
            }
        };
        if file_name(dir) == "Contents" {
            let macos = format!("{dir}/MacOS");
            (root(parent(dir)), dir.to_string(), macos)
        } else if file_name(dir) == "Resources" && !parent(dir).is_empty() {
            let version = parent(dir).to_string();
            (version.clone(), version.clone(), version)
        } else {
            (root(dir), dir.to_string(), dir.to_string())
        }
    }

    /// Resolves library edges, bundle edges and asar integrity once every part is known.
    pub(super) fn link(&mut self) {
        let main_executable = self
            .plists
            .iter()
            .find(|(rel, _)| rel == "Contents/Info.plist")
            .and_then(|(_, facts)| facts.executable.clone())
            .map(|exe| format!("Contents/MacOS/{exe}"));
        let images = std::mem::take(&mut self.images);
        // The tree is only read while edges are added; it is put back afterwards.
        let tree_store = std::mem::take(&mut self.tree);
        let mut merged: BTreeMap<EdgeKey, BTreeSet<Architecture>> = BTreeMap::new();
        for image in &images {
            let tree = self.directory_target.then_some(&tree_store);
            let executable_dir = self.executable_dir(image);
            let main = main_executable.as_ref().and_then(|exe| {
                images
                    .iter()
                    .filter(|other| &other.file == exe && other.file != image.file)
                    .find(|other| other.arch == image.arch || other.arch.is_none())
            });
            let inherited = main.map(|main| (main.rpaths.as_slice(), parent(&main.file)));
            for (kind, name) in &image.libraries {
                let resolved = if image.is_macho {
                    MachoLoader {
                        tree,
                        loader: &image.file,
                        executable_dir: executable_dir.as_deref(),
                        rpaths: &image.rpaths,
                        inherited,
                    }
                    .resolve(name)
                } else {
                    resolve::resolve_bare(tree, &image.file, name)
                };
                let occ = self.occ(
                    &image.image_part,
                    OccurrenceKind::Library,
                    Some(resolved.resolution.as_str()),
                    name,
                );
                if resolved.resolution == Resolution::Outside {
                    let place = if self.directory_target {
                        "the bundle"
                    } else {
                        "the file"
                    };
                    self.finding(
                        FindingRule::LibraryOutsideBundle,
                        Severity::Medium,
                        &image.image_part,
                        format!(
                            "{} loads {name} from a non-system location outside {place}; whoever controls that path controls the code",
                            image.image_part
                        ),
                        vec![occ],
                    );
                }
                let arches = merged
                    .entry((
                        image.file.clone(),
                        *kind,
                        name.clone(),
                        resolved.resolution,
                        resolved.resolved,
                        resolved.via,
                    ))
                    .or_default();
                arches.extend(image.arch);
            }
            if image.has_signature {
                merged
                    .entry((
                        image.file.clone(),
                        EdgeKind::CodeSignature,
                        String::from("LC_CODE_SIGNATURE"),
                        Resolution::Embedded,
                        None,
                        None,
                    ))
                    .or_default()
                    .extend(image.arch);
            }
        }
        for ((from, kind, target, resolution, resolved, via), arches) in merged {
            self.edges.push(Edge {
                from,
                kind,
                target,
                resolution,
                resolved,
                via,
                architectures: arches.into_iter().collect(),
            });
        }
        self.tree = tree_store;
        if self.directory_target {
            self.link_bundles();
        }
        self.images = images;
    }

    fn internal_edge(from: &str, kind: EdgeKind, target: &str, resolved: Option<String>) -> Edge {
        Edge {
            from: from.to_string(),
            kind,
            target: target.to_string(),
            resolution: if resolved.is_some() {
                Resolution::Internal
            } else {
                Resolution::Unresolved
            },
            resolved,
            via: None,
            architectures: Vec::new(),
        }
    }

    fn link_bundles(&mut self) {
        let plists = std::mem::take(&mut self.plists);
        // Content directory → main executable part, for code seals.
        let mut executables: BTreeMap<String, String> = BTreeMap::new();
        for (rel, facts) in &plists {
            let (bundle_dir, content_dir, exe_dir) = Self::bundle_layout(rel);
            self.edges.push(Self::internal_edge(
                &bundle_dir,
                EdgeKind::InfoPlist,
                rel,
                Some(rel.clone()),
            ));
            if let Some(exe) = &facts.executable {
                let path = resolve::join(&exe_dir, exe).unwrap_or_default();
                let found = self.tree.lookup(&path);
                if let Some(found) = &found {
                    executables.insert(content_dir.clone(), found.clone());
                }
                self.edges.push(Self::internal_edge(
                    &bundle_dir,
                    EdgeKind::MainExecutable,
                    &path,
                    found,
                ));
            }
            for integrity in &facts.asar_integrity {
                self.check_asar_integrity(rel, &content_dir, integrity);
            }
        }
        let seals: Vec<String> = self
            .parts
            .iter()
            .filter(|part| part.kind == PartKind::CodeSignature)
            .map(|part| part.path.clone())
            .collect();
        for seal in seals {
            let content_dir = parent(parent(&seal));
            let from = executables.get(content_dir).cloned().unwrap_or_else(|| {
                if content_dir.is_empty() {
                    ".".to_string()
                } else {
                    content_dir.to_string()
                }
            });
            self.edges.push(Self::internal_edge(
                &from,
                EdgeKind::CodeResources,
                &seal,
                Some(seal.clone()),
            ));
        }
        let asars: Vec<(String, bool, usize)> = self
            .asars
            .iter()
            .map(|(rel, facts)| (rel.clone(), facts.unpacked_dir, facts.unpacked_entries))
            .collect();
        for (rel, unpacked_dir, unpacked_entries) in asars {
            let folder = format!("{rel}.unpacked");
            if unpacked_dir || unpacked_entries > 0 {
                self.edges.push(Self::internal_edge(
                    &rel,
                    EdgeKind::AsarUnpacked,
                    &folder,
                    unpacked_dir.then(|| folder.clone()),
                ));
            }
        }
        self.plists = plists;
    }
}
