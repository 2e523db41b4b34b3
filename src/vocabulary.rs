//! The binary vocabulary: the one set of names rea gives container formats, architectures,
//! document roles, import kinds and callee kinds, wherever they appear (targets, documents,
//! inventories, Evidence subjects, tool results).
//!
//! Each name serializes to exactly the text rea has always written, because Evidence ids are
//! digests of that text; a JSON Schema of any of them lists the allowed values as a plain string
//! enum. A name compares equal to its text (`format == "elf"`), so code and tests that read the
//! text keep reading it.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A text that names no value of a vocabulary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not {expected}")]
pub struct UnknownName {
    /// The text offered.
    pub text: String,
    /// The vocabulary, in words.
    pub expected: &'static str,
}

macro_rules! vocabulary {
    (
        $(#[$doc:meta])*
        $name:ident, $what:literal, {
            $( $(#[$vdoc:meta])* $variant:ident => $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vdoc])* $variant ),+
        }

        impl $name {
            /// Every value, in declaration order.
            #[cfg(test)]
            const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The text rea writes for the value.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text ),+
                }
            }

            /// The value written as `text`.
            pub fn parse(text: &str) -> Result<$name, UnknownName> {
                match text {
                    $( $text => Ok($name::$variant), )+
                    _ => Err(UnknownName { text: text.to_owned(), expected: $what }),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = UnknownName;

            fn from_str(text: &str) -> Result<$name, UnknownName> {
                $name::parse(text)
            }
        }

        // Ordered by text, as the strings they replace were: sorted listings keep their order.
        impl Ord for $name {
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                self.as_str().cmp(other.as_str())
            }
        }

        impl PartialOrd for $name {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                let text = std::borrow::Cow::<str>::deserialize(d)?;
                $name::parse(&text).map_err(serde::de::Error::custom)
            }
        }

        impl JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }

            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({
                    "type": "string",
                    "enum": [$($text),+],
                })
            }
        }
    };
}

vocabulary!(
    /// Container format of a target or document.
    Format, "a format (elf, macho, macho-universal, pe, app-bundle, raw, javascript-app)", {
        /// An ELF image.
        Elf => "elf",
        /// A thin Mach-O image.
        MachO => "macho",
        /// A universal (fat) Mach-O file; its slices are documents of their own.
        MachOUniversal => "macho-universal",
        /// A PE/COFF image.
        Pe => "pe",
        /// A macOS `.app` bundle directory.
        AppBundle => "app-bundle",
        /// Any other file, read as raw data.
        Raw => "raw",
        /// A JavaScript/Electron application (directory or asar).
        JavascriptApp => "javascript-app",
    }
);

vocabulary!(
    /// Architecture of a document, or of a target: `multi` when its documents differ.
    Architecture, "an architecture name such as x86_64, arm64 or unknown", {
        /// 32-bit x86.
        X86 => "x86",
        /// x86-64.
        X86_64 => "x86_64",
        /// 32-bit ARM.
        Arm => "arm",
        /// 64-bit ARM.
        Arm64 => "arm64",
        /// 64-bit ARM with pointer authentication (Apple).
        Arm64e => "arm64e",
        /// 64-bit ARM with 32-bit pointers (Apple watchOS).
        Arm64_32 => "arm64_32",
        /// ARM64EC (Windows).
        Arm64ec => "arm64ec",
        /// 32-bit PowerPC.
        Ppc => "ppc",
        /// 64-bit PowerPC.
        Ppc64 => "ppc64",
        /// 32-bit MIPS.
        Mips => "mips",
        /// 64-bit MIPS.
        Mips64 => "mips64",
        /// 32-bit RISC-V.
        Riscv32 => "riscv32",
        /// 64-bit RISC-V.
        Riscv64 => "riscv64",
        /// IBM Z.
        S390x => "s390x",
        /// 32-bit SPARC.
        Sparc => "sparc",
        /// 64-bit SPARC.
        Sparcv9 => "sparcv9",
        /// 64-bit LoongArch.
        Loongarch64 => "loongarch64",
        /// JavaScript: the architecture of an application analyzed as source.
        Javascript => "javascript",
        /// Several architectures (a universal file or bundle whose documents differ).
        Multi => "multi",
        /// The header names no architecture rea knows.
        Unknown => "unknown",
    }
);

vocabulary!(
    /// What a document is within its target.
    DocumentRole, "a document role (file, slice, main-executable, framework, library, helper, plug-in, xpc-service, native-module, image)", {
        /// The target file itself.
        File => "file",
        /// A slice of a universal file.
        Slice => "slice",
        /// A bundle's main executable.
        MainExecutable => "main-executable",
        /// The binary of a framework inside a bundle.
        Framework => "framework",
        /// A library inside a bundle.
        Library => "library",
        /// A helper application or tool inside a bundle.
        Helper => "helper",
        /// A plug-in or app extension.
        PlugIn => "plug-in",
        /// An XPC service.
        XpcService => "xpc-service",
        /// A Node native module (`.node`).
        NativeModule => "native-module",
        /// Another executable image of a bundle.
        Image => "image",
    }
);

vocabulary!(
    /// How code reaches an imported symbol.
    ImportKind, "an import kind (plt, got, stub, pointer, iat, thunk)", {
        /// An ELF procedure linkage table stub.
        Plt => "plt",
        /// An ELF global offset table slot.
        Got => "got",
        /// A Mach-O symbol stub.
        Stub => "stub",
        /// A Mach-O pointer slot.
        Pointer => "pointer",
        /// A PE import address table slot.
        Iat => "iat",
        /// PE code that jumps through an import address table slot (mingw-w64's
        /// `puts: jmp [__imp_puts]`).
        Thunk => "thunk",
    }
);

vocabulary!(
    /// What a procedure's call (or tail jump) reaches.
    CalleeKind, "a callee kind (procedure, import, address)", {
        /// The start of a known procedure.
        Procedure => "procedure",
        /// An import's stub or pointer slot.
        Import => "import",
        /// An address that starts no known procedure.
        Address => "address",
    }
);

vocabulary!(
    /// Where a procedure's name comes from when no symbol gives it.
    NameOrigin, "a name source (LC_MAIN, entry:__libc_start_main, entry:__tmainCRTStartup, entry:mainCRTStartup, entry:msvc-static-crt, objc_classlist, objc_catlist)", {
        /// `main` at the Mach-O `LC_MAIN` entry.
        LcMain => "LC_MAIN",
        /// `main` as the first argument the ELF entry code passes to `__libc_start_main`.
        LibcStartMain => "entry:__libc_start_main",
        /// `main` as mingw-w64's `__tmainCRTStartup`, called by the PE entry, calls it.
        MingwCrtStartup => "entry:__tmainCRTStartup",
        /// `main` (`wmain`, `WinMain`, `wWinMain`) as the MSVC C runtime's start calls it once
        /// an import (`__getmainargs`, `__p___argv`, ...) gave it the arguments, and passes
        /// its result to `exit`.
        MsvcCrtStartup => "entry:mainCRTStartup",
        /// `WinMain`, `wWinMain`, `main` or `wmain` as the start of a statically linked MSVC C
        /// runtime calls it, by its arguments (the image base and zero first; or three values
        /// loaded from globals) and its result passed on to another call (`exit`).
        MsvcStaticCrt => "entry:msvc-static-crt",
        /// An Objective-C method of a class in `__objc_classlist`.
        ObjcClasslist => "objc_classlist",
        /// An Objective-C method of a category in `__objc_catlist`.
        ObjcCatlist => "objc_catlist",
    }
);

vocabulary!(
    /// How a procedure no table of the file lists was found: by following code from a root, or
    /// at a root the file points at without listing it as a function.
    FoundBy, "a discovery source (call, tail-jump, pointer, after-trap, init_array, fini_array, preinit_array, DT_INIT, DT_FINI, tls_callback, mod_init_func, mod_term_func)", {
        /// The target of a direct call in code followed from a known start.
        Call => "call",
        /// The target of a direct jump that leaves the procedure it is in.
        TailJump => "tail-jump",
        /// A code pointer stored in data (a relocation's value or a base-relocated word).
        Pointer => "pointer",
        /// The code after the `int3` padding that follows a call the compiler marked as not
        /// returning (`call abort; int3`), where no walk reaches: the next function's start.
        AfterTrap => "after-trap",
        /// An entry of the ELF `.init_array`.
        InitArray => "init_array",
        /// An entry of the ELF `.fini_array`.
        FiniArray => "fini_array",
        /// An entry of the ELF `.preinit_array`.
        PreinitArray => "preinit_array",
        /// The ELF dynamic tag `DT_INIT`.
        DtInit => "DT_INIT",
        /// The ELF dynamic tag `DT_FINI`.
        DtFini => "DT_FINI",
        /// A PE TLS callback.
        TlsCallback => "tls_callback",
        /// An initializer of a Mach-O (`__mod_init_func`, `__init_offsets`).
        ModInitFunc => "mod_init_func",
        /// A terminator of a Mach-O (`__mod_term_func`).
        ModTermFunc => "mod_term_func",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_round_trips_through_its_text() {
        for f in Format::ALL {
            assert_eq!(Format::parse(f.as_str()), Ok(*f));
            let json = serde_json::to_string(f).unwrap();
            assert_eq!(json, format!("\"{f}\""));
            assert_eq!(serde_json::from_str::<Format>(&json).unwrap(), *f);
        }
        for a in Architecture::ALL {
            assert_eq!(Architecture::parse(a.as_str()), Ok(*a));
        }
        for r in DocumentRole::ALL {
            assert_eq!(DocumentRole::parse(r.as_str()), Ok(*r));
        }
        for k in ImportKind::ALL {
            assert_eq!(ImportKind::parse(k.as_str()), Ok(*k));
        }
        for k in CalleeKind::ALL {
            assert_eq!(CalleeKind::parse(k.as_str()), Ok(*k));
        }
        for o in NameOrigin::ALL {
            assert_eq!(NameOrigin::parse(o.as_str()), Ok(*o));
        }
        for o in FoundBy::ALL {
            assert_eq!(FoundBy::parse(o.as_str()), Ok(*o));
        }
        assert!(Format::parse("ELF").is_err());
        assert!(serde_json::from_str::<Architecture>("\"aarch64\"").is_err());
        assert_eq!(Format::MachOUniversal, "macho-universal");
        // Sorted as their text is.
        let mut archs = vec![
            Architecture::X86_64,
            Architecture::Arm64,
            Architecture::Multi,
        ];
        archs.sort();
        assert_eq!(
            archs,
            [
                Architecture::Arm64,
                Architecture::Multi,
                Architecture::X86_64
            ]
        );
    }

    #[test]
    fn schemas_are_plain_string_enums() {
        let schema = serde_json::to_value(schemars::schema_for!(DocumentRole)).unwrap();
        assert_eq!(schema["type"], "string");
        assert_eq!(
            schema["enum"].as_array().unwrap().len(),
            DocumentRole::ALL.len()
        );
        assert!(schema.get("oneOf").is_none());
    }
}
