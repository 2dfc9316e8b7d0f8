# Sourced by Spark's launch scripts (SPARK_CONF_DIR): the standalone master and workers of the tests
# run C1 alone with the serial collector, like their drivers and executors (spark-defaults.conf).
export SPARK_DAEMON_JAVA_OPTS="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
