//! A cheap answer for `auto` (XPU §8.1): can any installed Vulkan driver report a GPU-type
//! device? Asking Vulkan loads every installed driver, and loading lavapipe (a CPU
//! implementation built on LLVM) alone costs about 25 ms per run, although `auto` never picks
//! it. So on Linux the driver manifests the loader would read are read here first, and Vulkan
//! is skipped when they settle the answer:
//!
//! * every manifest names a CPU implementation (lavapipe, SwiftShader: they only ever report
//!   CPU-type devices), or a Mesa driver for GPUs behind a kernel DRM render node (intel,
//!   radeon, nouveau, …) while `/dev/dri` has no entry at all (such a driver finds its devices
//!   only there);
//! * nothing else may add a device: no `LD_PRELOAD` (Mesa's drm-shim fakes DRM devices that
//!   way), no `RADV_FORCE_FAMILY` (radv's device without hardware), no layers requested
//!   through the environment.
//!
//! Any other manifest (NVIDIA, AMDVLK, an unknown name, an unreadable file), no manifest
//! found, or another system: Vulkan is asked as before. Manifests are searched in more places
//! than the loader uses (its documented search path plus the usual defaults), so a driver the
//! loader would see is not missed; an extra one found can only make the probe ask Vulkan.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What a driver manifest's library is, for the question "can it report a GPU?".
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Driver {
    /// A CPU implementation: never a GPU-type device.
    Cpu,
    /// A Mesa GPU driver whose devices are DRM render nodes under `/dev/dri`.
    Drm,
}

/// Mesa's GPU drivers that find devices only through DRM render nodes (library names without
/// the `.so` suffix). Turnip (freedreno) and venus (virtio) are not here: they have other
/// ways to reach a device (kgsl, vtest).
const DRM_DRIVERS: [&str; 8] = [
    "libvulkan_intel",
    "libvulkan_intel_hasvk",
    "libvulkan_radeon",
    "libvulkan_nouveau",
    "libvulkan_broadcom",
    "libvulkan_panfrost",
    "libvulkan_asahi",
    "libvulkan_powervr_mesa",
];

/// Why no GPU-type Vulkan device can exist here, when the manifests settle it (see the module
/// docs); `None`: Vulkan must be asked.
pub(crate) fn no_gpu_device() -> Option<String> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if [
        "LD_PRELOAD",
        "RADV_FORCE_FAMILY",
        "VK_INSTANCE_LAYERS",
        "VK_LOADER_LAYERS_ENABLE",
    ]
    .iter()
    .any(|k| env(k).is_some())
    {
        return None;
    }
    let manifests: Vec<(PathBuf, Option<String>)> = manifest_files(&env)
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).ok();
            (p, text)
        })
        .collect();
    // A `/dev/dri` that exists but cannot be listed counts as having devices.
    let dri = match std::fs::read_dir("/dev/dri") {
        Ok(mut d) => d.next().is_some(),
        Err(e) => e.kind() != std::io::ErrorKind::NotFound,
    };
    decide(&manifests, dri)
}

/// The decision over the manifests read (`None` text: unreadable) and whether `/dev/dri` has
/// an entry.
fn decide(manifests: &[(PathBuf, Option<String>)], dri: bool) -> Option<String> {
    if manifests.is_empty() {
        return None;
    }
    let mut names = Vec::with_capacity(manifests.len());
    for (_, text) in manifests {
        let lib = library_path(text.as_deref()?)?;
        let name = library_name(&lib);
        match classify(name)? {
            Driver::Cpu => names.push(format!("{name} (CPU)")),
            Driver::Drm if !dri => names.push(name.to_string()),
            Driver::Drm => return None,
        }
    }
    Some(format!(
        "no Vulkan driver here can report a GPU (drivers: {}; no /dev/dri device)",
        names.join(", ")
    ))
}

/// The kind of the driver library `name` (file name without `.so…`), if known.
fn classify(name: &str) -> Option<Driver> {
    if name.starts_with("libvulkan_lvp") || name.contains("swiftshader") {
        Some(Driver::Cpu)
    } else if DRM_DRIVERS.contains(&name) {
        Some(Driver::Drm)
    } else {
        None
    }
}

/// The file name of `path` without its directory and from `.so` on.
fn library_name(path: &str) -> &str {
    let file = path.rsplit('/').next().unwrap_or(path);
    file.split(".so").next().unwrap_or(file)
}

/// The manifest's `"library_path"` string (JSON escapes `\"`, `\\` and `\/` undone; any other
/// escape gives `None`: such a manifest is treated as unknown).
fn library_path(json: &str) -> Option<String> {
    let rest = &json[json.find("\"library_path\"")? + "\"library_path\"".len()..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let mut chars = rest.strip_prefix('"')?.chars();
    let mut out = String::new();
    loop {
        match chars.next()? {
            '"' => return Some(out),
            '\\' => match chars.next()? {
                c @ ('"' | '\\' | '/') => out.push(c),
                _ => return None,
            },
            c => out.push(c),
        }
    }
}

/// The manifest files the loader may read: `VK_DRIVER_FILES` (or `VK_ICD_FILENAMES`) when set,
/// else every `vulkan/icd.d` directory of the XDG configuration and data paths and their
/// defaults; then `VK_ADD_DRIVER_FILES`. An entry of those variables is a file or a directory.
fn manifest_files(env: &dyn Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let listed = |var: &str, out: &mut Vec<PathBuf>| {
        for p in env(var).iter().flat_map(std::env::split_paths) {
            json_files(&p, out);
        }
    };
    if env("VK_DRIVER_FILES").is_some() {
        listed("VK_DRIVER_FILES", &mut out);
    } else if env("VK_ICD_FILENAMES").is_some() {
        listed("VK_ICD_FILENAMES", &mut out);
    } else {
        let home = env("HOME").map(PathBuf::from);
        let mut dirs: Vec<PathBuf> = Vec::new();
        let mut var_or = |var: &str, home_rel: &str, defaults: &[&str]| {
            match env(var) {
                Some(v) => dirs.extend(std::env::split_paths(&v)),
                None => dirs.extend(home.iter().map(|h| h.join(home_rel))),
            }
            dirs.extend(defaults.iter().map(PathBuf::from));
        };
        var_or("XDG_CONFIG_HOME", ".config", &[]);
        var_or("XDG_CONFIG_DIRS", "", &["/etc/xdg"]);
        var_or("XDG_DATA_HOME", ".local/share", &[]);
        var_or("XDG_DATA_DIRS", "", &["/usr/local/share", "/usr/share"]);
        dirs.extend(
            ["/etc", "/usr/local/etc", "/run/opengl-driver/share"]
                .iter()
                .map(PathBuf::from),
        );
        for d in dirs.iter().filter(|d| d.is_absolute()) {
            json_files(&d.join("vulkan/icd.d"), &mut out);
        }
    }
    listed("VK_ADD_DRIVER_FILES", &mut out);
    out.sort();
    out.dedup();
    out
}

/// `path` if it is a file, else the `*.json` files directly in it (nothing if it is missing).
fn json_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_file() {
        out.push(path.to_path_buf());
    } else if let Ok(entries) = std::fs::read_dir(path) {
        out.extend(
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file()),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(lib: &str) -> (PathBuf, Option<String>) {
        let text = format!(
            "{{\n    \"ICD\": {{\n        \"api_version\": \"1.3.230\",\n        \"library_path\": \"{lib}\"\n    }},\n    \"file_format_version\": \"1.0.0\"\n}}"
        );
        (PathBuf::from("x.json"), Some(text))
    }

    #[test]
    fn only_cpu_drivers_or_drm_drivers_without_dri_skip_vulkan() {
        let lvp = manifest("/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so");
        let intel = manifest("/usr/lib/x86_64-linux-gnu/libvulkan_intel.so");
        let radeon = manifest("libvulkan_radeon.so");
        let nvidia = manifest("libGLX_nvidia.so.0");
        let swift = manifest("./libvk_swiftshader.so");
        let why = decide(std::slice::from_ref(&lvp), false).unwrap();
        assert!(why.contains("libvulkan_lvp (CPU)"), "{why}");
        assert!(decide(std::slice::from_ref(&lvp), true).is_some());
        assert!(decide(std::slice::from_ref(&swift), true).is_some());
        let mesa = [intel.clone(), lvp.clone(), radeon.clone()];
        let why = decide(&mesa, false).unwrap();
        assert!(why.contains("libvulkan_intel, libvulkan_lvp (CPU), libvulkan_radeon"));
        // A render node: the GPU drivers must be asked.
        assert_eq!(decide(&mesa, true), None);
        // Unknown drivers, unreadable or odd manifests, no manifest: ask.
        assert_eq!(decide(&[lvp.clone(), nvidia], false), None);
        assert_eq!(
            decide(&[lvp.clone(), (PathBuf::from("y"), None)], false),
            None
        );
        let odd = manifest("C:\\\\x\\u0041.dll");
        assert_eq!(decide(&[odd], false), None);
        assert_eq!(
            decide(&[(PathBuf::from("z"), Some("{}".into()))], false),
            None
        );
        assert_eq!(decide(&[], false), None);
    }

    #[test]
    fn library_paths_and_names() {
        assert_eq!(
            library_path(r#"{"ICD": {"library_path" : "a\/b\\c\"d"}}"#).as_deref(),
            Some("a/b\\c\"d")
        );
        assert_eq!(library_path(r#"{"library_path": 3}"#), None);
        assert_eq!(library_path(r#"{"library_path": "abc"#), None);
        assert_eq!(
            library_name("/usr/lib/libvulkan_intel.so"),
            "libvulkan_intel"
        );
        assert_eq!(library_name("libGLX_nvidia.so.0"), "libGLX_nvidia");
        assert_eq!(classify("libvulkan_intel_hasvk"), Some(Driver::Drm));
        assert_eq!(classify("libvulkan_freedreno"), None);
        assert_eq!(classify("libvulkan_lvp"), Some(Driver::Cpu));
    }

    #[test]
    fn the_driver_variables_replace_the_search_and_add_files() {
        let dir = std::env::temp_dir().join(format!("cajeta-icd-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("vulkan/icd.d")).unwrap();
        let a = dir.join("vulkan/icd.d/a.json");
        let b = dir.join("b.json");
        std::fs::write(&a, "{}").unwrap();
        std::fs::write(&b, "{}").unwrap();
        std::fs::write(dir.join("vulkan/icd.d/notes.txt"), "").unwrap();
        let vars = |pairs: Vec<(&'static str, OsString)>| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
        };
        // The override lists a directory; the addition a file.
        let env = vars(vec![
            ("VK_ICD_FILENAMES", dir.join("vulkan/icd.d").into()),
            ("VK_ADD_DRIVER_FILES", b.clone().into()),
        ]);
        assert_eq!(manifest_files(&env), vec![b.clone(), a.clone()]);
        // VK_DRIVER_FILES wins over VK_ICD_FILENAMES.
        let env = vars(vec![
            ("VK_DRIVER_FILES", b.clone().into()),
            ("VK_ICD_FILENAMES", a.clone().into()),
        ]);
        assert_eq!(manifest_files(&env), vec![b.clone()]);
        // The search path: XDG_DATA_DIRS's directories, among the defaults.
        let env = vars(vec![("XDG_DATA_DIRS", dir.clone().into())]);
        assert!(manifest_files(&env).contains(&a));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
