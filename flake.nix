{
  # Development shell with the toolchain offload builds against: Rust, LLVM/MLIR 22,
  # clang and lld. Not exercised in this project's CI (which uses Debian packages via
  # tools/ensure-deps); see README.md.
  description = "offload: safe GPU offloading for stable Rust, built on MLIR";

  inputs = {
    nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";
    flake-utils.url = "github:numtide/flake-utils";
  };

  outputs = { self, nixpkgs, flake-utils }:
    flake-utils.lib.eachDefaultSystem (system:
      let
        pkgs = import nixpkgs { inherit system; };
        llvm = pkgs.llvmPackages_22;
      in {
        devShells.default = pkgs.mkShell {
          packages = [
            pkgs.rustc pkgs.cargo pkgs.rustfmt pkgs.clippy
            llvm.llvm llvm.llvm.dev llvm.mlir llvm.clang llvm.lld llvm.libclang
            pkgs.zstd pkgs.z3 pkgs.libxml2 pkgs.zlib
          ];
          LIBCLANG_PATH = "${llvm.libclang.lib}/lib";
          MLIR_SYS_220_PREFIX = "${llvm.mlir.dev}";
          TABLEGEN_220_PREFIX = "${llvm.llvm.dev}";
          LLVM_SYS_221_PREFIX = "${llvm.llvm.dev}";
        };
      });
}
