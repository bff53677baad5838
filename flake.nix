{
  description = "nix-heft: why a Nix closure is heavy, and how to cut it";

  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";

  outputs =
    { self, nixpkgs }:
    let
      systems = [
        "x86_64-linux"
        "aarch64-linux"
        "x86_64-darwin"
        "aarch64-darwin"
      ];
      forAllSystems = f: nixpkgs.lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});
    in
    {
      # `nixpkgs.overlays = [ nix-heft.overlays.default ];` gives pkgs.nix-heft.
      overlays.default = final: prev: { nix-heft = final.callPackage ./nix/package.nix { }; };

      packages = forAllSystems (pkgs: rec {
        nix-heft = pkgs.callPackage ./nix/package.nix { };
        default = nix-heft;
      });

      # `nix run github:OWNER/nix-heft -- advise ./result`
      apps = forAllSystems (pkgs: {
        default = {
          type = "app";
          program = "${self.packages.${pkgs.stdenv.hostPlatform.system}.default}/bin/nix-heft";
        };
      });

      # The package builds with its unit tests as checks.
      checks = forAllSystems (pkgs: {
        default = self.packages.${pkgs.stdenv.hostPlatform.system}.default;
      });

      devShells = forAllSystems (pkgs: {
        default = pkgs.mkShell {
          inputsFrom = [ self.packages.${pkgs.stdenv.hostPlatform.system}.default ];
          packages = with pkgs; [
            cargo
            rustc
            clippy
            rustfmt
            rust-analyzer
            cargo-insta
            python3
            tmux
            patchelf
            strace
          ];
        };
      });
    };
}
