package io.hudicdc.fs;

import org.apache.hadoop.fs.LocalFileSystem;

/**
 * Hadoop's checksummed local file system ({@code file://}) over {@link NioRawLocalFileSystem}: what a
 * local session's {@code fs.file.impl} names (hudi_cdc/jars.py), so no chmod process per file.
 */
public class NioLocalFileSystem extends LocalFileSystem {
  public NioLocalFileSystem() {
    super(new NioRawLocalFileSystem());
  }
}
