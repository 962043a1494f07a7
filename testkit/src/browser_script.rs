//! A Node.js script that drives Debian's Chromium (puppeteer-core, in `console-plugin/e2e/`), run from a test: its
//! output lines as they come, its exit status, and a time limit that ends it with every process it started.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::plugin_server::PluginServer;

/// What a script printed and how it ended.
#[derive(Debug)]
pub struct Run {
    /// How it ended.
    pub status: ExitStatus,
    /// Its standard output, line by line.
    pub stdout: Vec<String>,
    /// Its standard error.
    pub stderr: String,
}

/// What a script needs to run: Node.js and Chromium.
#[derive(Clone, Debug)]
pub struct Prerequisites {
    /// Node.js.
    pub node: PathBuf,
    /// Chromium.
    pub chromium: PathBuf,
}

/// Node.js and Chromium, and the packages of the npm project in `dir` (puppeteer-core among them) installed; else
/// what to do to have them.
pub fn prerequisites(dir: &Path) -> Result<Prerequisites, String> {
    let node = on_path("node").ok_or("Node.js (node) is not on the PATH: run hack/install-prerequisites.sh")?;
    let chromium = crate::browser::chromium().ok_or(
        "Chromium is missing: run hack/install-prerequisites.sh (it installs Debian's chromium), or set NUMO_CHROMIUM \
         to a Chromium binary",
    )?;
    if !dir.join("node_modules/puppeteer-core/package.json").is_file() {
        return Err(format!("the console plugin's packages are not installed: cd {} && npm ci", dir.display()));
    }
    Ok(Prerequisites { node, chromium })
}

/// The console shell's end-to-end scripts (`console-plugin/e2e/run.mjs`, `load.mjs`): the console shell
/// (`console-plugin/e2e/shell`) loading the plugin's production build (`console-plugin/dist`) from numo's own HTTPS
/// server ([`PluginServer`]), in Debian's headless Chromium.
#[derive(Clone, Debug)]
pub struct ConsoleShell {
    /// The console plugin's folder, `console-plugin/`.
    pub plugin: PathBuf,
    /// Node.js and Chromium.
    pub prerequisites: Prerequisites,
    /// The projections of the numo whose timelines the plugin server serves (`numo::Context::projections` of the
    /// operator the test runs); none by default.
    pub projections: numo::projections::Projections,
}

/// The ServiceAccount whose token the console shell forwards through its plugin proxy, as the console forwards its
/// logged-in user's (`authorization: UserToken`); bound to `cluster-admin`, as an admin at the console would be.
pub const CONSOLE_USER: (&str, &str) = ("default", "numo-console-user");

/// A token of [`CONSOLE_USER`], bound to `cluster-admin`.
pub async fn console_user_token(client: &kube::Client) -> anyhow::Result<String> {
    let (namespace, name) = CONSOLE_USER;
    let user = crate::users::service_account(client, namespace, name).await?;
    let binding: k8s_openapi::api::rbac::v1::ClusterRoleBinding = serde_json::from_value(serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
    }))?;
    kube::Api::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>::all(client.clone())
        .patch(name, &kube::api::PatchParams::apply("numo-testkit").force(), &kube::api::Patch::Apply(&binding))
        .await?;
    Ok(user.token)
}

/// What a console shell script reported, and the plugin server it ran against.
#[derive(Debug)]
pub struct ShellChecks {
    /// Its checks, in order ([`run_checks`]).
    pub checks: Vec<Value>,
    /// numo's plugin server: its URL, `https://127.0.0.1:<port>`.
    pub plugin_url: String,
    /// How many files numo's plugin server served.
    pub files: usize,
}

/// The console shell for the test `test`: None when browser tests are skipped ([`crate::browser::skipped`]). Panics,
/// saying what to do, when Node.js, Chromium or the plugin's packages are missing, or the plugin's production build
/// or the shell is not built.
pub fn console_shell(test: &str) -> Option<ConsoleShell> {
    if crate::browser::skipped(test) {
        return None;
    }
    let plugin = crate::repo::root().join("console-plugin");
    let prerequisites = prerequisites(&plugin).unwrap_or_else(|e| panic!("{e}"));
    let manifest = format!("dist/{}", numo::console_plugin::assets::MANIFEST);
    for (file, command) in [
        (manifest.as_str(), "hack/console-plugin.sh build"),
        ("e2e/shell/dist/index.html", "hack/console-plugin.sh shell"),
    ] {
        assert!(plugin.join(file).is_file(), "the console plugin's {file} is not built: {command}");
    }
    Some(ConsoleShell { plugin, prerequisites, projections: Default::default() })
}

impl ConsoleShell {
    /// Runs `e2e/<script>` with `args` and the arguments every console shell script takes: the test cluster's
    /// kubeconfig, numo's plugin server (started here, serving the plugin's build and the timelines with
    /// [`Self::projections`], stopped when the script is done), the token of [`CONSOLE_USER`] that the shell's plugin
    /// proxy forwards (`--user-token`), `--out` (`target/test-output/<out>`, emptied first) and a time limit 20 s under
    /// `timeout`, after which the script is killed. Its checks as [`run_checks`] returns them (`kept`: what the output
    /// folder keeps).
    pub async fn run(
        &self,
        script: &str,
        args: &[impl AsRef<str>],
        out: &str,
        timeout: Duration,
        kept: &str,
    ) -> anyhow::Result<ShellChecks> {
        let out = crate::browser::output_dir().join(out);
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(&out)?;
        let cluster = crate::cluster().await?;
        let kubeconfig = cluster.kubeconfig().display().to_string();
        let token = console_user_token(&cluster.client()).await?;
        let source =
            crate::plugin_server::Source { config: cluster.config().clone(), projections: self.projections.clone() };
        let server = PluginServer::start(&self.plugin.join("dist"), Some(source)).await?;
        let mut all: Vec<String> = vec![format!("e2e/{script}")];
        all.extend(args.iter().map(|a| a.as_ref().to_string()));
        all.extend(["--kubeconfig".into(), kubeconfig, "--out".into(), out.display().to_string()]);
        all.extend(server.script_args());
        all.extend(["--user-token".into(), token]);
        all.extend(["--timeout-seconds".into(), (timeout.as_secs().saturating_sub(20)).to_string()]);
        let checks = run_checks(&self.prerequisites, &self.plugin, all, timeout, script, &out, kept).await?;
        Ok(ShellChecks { checks, plugin_url: server.url(), files: server.files })
    }
}

/// Runs a check script (as [`run`], on a blocking thread: `node args...` in `dir`, labelled `label`) that prints one
/// JSON object a line, `{"check": <name>, "ok": <bool>, "screenshot": <file in out>, ...}`, and returns those
/// checks, kept in `out/checks.jsonl` too. Panics when the script failed or a check is not ok (with the script's
/// stderr, saying that `kept` are in `out`), or when a screenshot a check names is not in `out`.
pub async fn run_checks(
    prerequisites: &Prerequisites,
    dir: &Path,
    args: Vec<String>,
    timeout: Duration,
    label: &str,
    out: &Path,
    kept: &str,
) -> anyhow::Result<Vec<Value>> {
    let run = {
        let (node, dir, chromium) = (prerequisites.node.clone(), dir.to_path_buf(), prerequisites.chromium.clone());
        let label = label.to_string();
        tokio::task::spawn_blocking(move || run(&node, &dir, &chromium, &args, timeout, &label))
    };
    let run = run.await?.unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(out.join("checks.jsonl"), run.stdout.join("\n"))?;
    let checks: Vec<Value> = run
        .stdout
        .iter()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{label} printed a line that is not JSON ({e}): {line}"))
        })
        .collect();
    let failed: Vec<&Value> = checks.iter().filter(|c| c["ok"] != Value::Bool(true)).collect();
    assert!(
        run.status.success() && failed.is_empty(),
        "{label} exited with {}; failed checks: {failed:#?}\nits stderr:\n{}\n{kept} in {}",
        run.status,
        run.stderr,
        out.display()
    );
    for shot in checks.iter().filter_map(|c| c["screenshot"].as_str()) {
        assert!(out.join(shot).is_file(), "the screenshot {shot} is kept in {}", out.display());
    }
    Ok(checks)
}

/// `name` on the PATH, if it is there.
pub fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|candidate| candidate.is_file())
}

/// Runs `node args...` in `dir` with `NUMO_CHROMIUM` set to `chromium`, in a process group of its own (so that the
/// time limit ends Chromium too), echoing every line it prints to the test's stderr as it comes, prefixed with
/// `label`.
pub fn run(
    node: &Path,
    dir: &Path,
    chromium: &Path,
    args: &[String],
    timeout: Duration,
    label: &str,
) -> Result<Run, String> {
    let mut child = Command::new(node)
        .args(args)
        .current_dir(dir)
        .env("NUMO_CHROMIUM", chromium)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", node.display()))?;
    let stdout = child.stdout.take().map(|out| {
        let label = label.to_string();
        std::thread::spawn(move || {
            BufReader::new(out)
                .lines()
                .map_while(Result::ok)
                .inspect(|line| eprintln!("{label}: {line}"))
                .collect::<Vec<String>>()
        })
    });
    let stderr = child.stderr.take().map(|mut err| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = err.read_to_string(&mut text);
            text
        })
    });
    let Some(status) = wait_or_kill_group(&mut child, timeout, Duration::from_millis(100))? else {
        return Err(format!("{label} took more than {}s and was killed", timeout.as_secs()));
    };
    Ok(Run {
        status,
        stdout: stdout.and_then(|t| t.join().ok()).unwrap_or_default(),
        stderr: stderr.and_then(|t| t.join().ok()).unwrap_or_default(),
    })
}

/// Waits until `child`, started in a process group of its own, exits, looking every `poll`: its exit status, or None
/// once `timeout` has passed and the whole group (the child and every process it started) is killed.
pub(crate) fn wait_or_kill_group(
    child: &mut Child,
    timeout: Duration,
    poll: Duration,
) -> Result<Option<ExitStatus>, String> {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return Ok(Some(status));
        }
        if started.elapsed() > timeout {
            let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(poll);
    }
}
