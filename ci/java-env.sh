#!/usr/bin/env bash
# JDK 17 and Maven from Debian when they are missing (sourced by the ci/*-java.sh scripts).
if ! command -v mvn >/dev/null || ! command -v javac >/dev/null; then
  echo "ci: installing openjdk-17-jdk-headless maven"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null
fi
