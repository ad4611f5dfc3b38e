#!/usr/bin/env bash
# Fails when git tracks a build output: any file over 1 MiB outside a
# testdata/ directory, and any ELF or Mach-O binary wherever it is. It names
# each offending file with its size or its kind. make lint runs it; the
# argument, if given, is the work tree to check (default: this repository).
set -euo pipefail
cd "${1:-$(dirname "${BASH_SOURCE[0]}")/..}"
git ls-files -z --cached | perl -0 -ne '
	BEGIN { $limit = 1024 * 1024; $bad = 0 }
	chomp; my $f = $_;
	next unless -f $f;    # deleted in the work tree, not yet committed
	my $size = -s _;
	if ($size > $limit && "/$f" !~ m{/testdata/}) {
		print STDERR "$f: $size bytes, over the 1 MiB limit for tracked files outside testdata/\n";
		$bad = 1;
	}
	open(my $fh, "<:raw", $f) or die "$f: $!\n";
	my $n = read($fh, my $magic, 4); close($fh);
	$magic = unpack("H*", $magic // "");
	my %kinds = (
		"7f454c46" => "an ELF binary",
		"feedface" => "a Mach-O binary", "feedfacf" => "a Mach-O binary",
		"cefaedfe" => "a Mach-O binary", "cffaedfe" => "a Mach-O binary",
		"cafebabe" => "a Mach-O universal binary (or a Java class file)",
	);
	if (my $kind = $kinds{$magic}) {
		print STDERR "$f: $kind; build outputs do not belong in git (git rm --cached it and list it in .gitignore)\n";
		$bad = 1;
	}
	END { if ($bad) { print STDERR "check-tracked-files: fix the files above\n"; exit 1 } }
'
