# nix-heft as a nixpkgs package: `callPackage ./nix/package.nix { }`.
# Builtins only beyond the arguments, so the tests can evaluate it without
# nixpkgs (tests/testsuite/packaging.rs).
{
  rustPlatform,
  installShellFiles,
  stdenv,
}:

let
  cargo = builtins.fromTOML (builtins.readFile ../Cargo.toml);
  # The crate's sources only: no build output, benchmark data or VCS.
  src = builtins.path {
    name = "nix-heft-source";
    path = ./..;
    filter =
      path: type:
      let
        base = baseNameOf path;
      in
      !(builtins.elem base [
        "target"
        ".git"
        "result"
        ".data"
      ]);
  };
in
rustPlatform.buildRustPackage {
  pname = cargo.package.name;
  # The version is the workspace's, which every crate shares.
  inherit (cargo.workspace.package) version;
  inherit src;
  cargoLock.lockFile = ../Cargo.lock;

  nativeBuildInputs = [ installShellFiles ];

  # The crates' unit tests are the checks. The integration tests (tests/)
  # build real stores with Nix as root and install tools with apt-get,
  # which the build sandbox cannot do: scripts/test.sh runs them outside.
  cargoTestFlags = [
    "--workspace"
    "--lib"
  ];

  postInstall =
    # The setup hook (nix/setup-hook.sh): with nativeBuildInputs = [ nix-heft ]
    # a build that Nix will refuse for a reference says which files hold it.
    ''
      install -Dm644 nix/setup-hook.sh $out/nix-support/setup-hook
    ''
    + (
      if stdenv.buildPlatform.canExecute stdenv.hostPlatform then
        ''
        installShellCompletion --cmd nix-heft \
          --bash <($out/bin/nix-heft completions bash) \
          --zsh <($out/bin/nix-heft completions zsh) \
          --fish <($out/bin/nix-heft completions fish)
        # nix-heft.1 and one nix-heft-COMMAND.1 per subcommand, the pages
        # the main one names.
        $out/bin/nix-heft man --out-dir man
        installManPage man/*.1
      ''
      else
        ""
    );

  meta = {
    description = "Why a Nix closure is heavy, and how to cut it, with evidence down to the file";
    mainProgram = "nix-heft";
  };
}
