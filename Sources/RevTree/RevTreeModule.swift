public enum RevTreeModule {}
