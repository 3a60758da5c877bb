"""`python -m lakemirror.bench`: the `lakemirror bench` command with every option."""

from lakemirror.bench.cli import bench

if __name__ == "__main__":
    bench()
